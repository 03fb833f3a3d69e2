// A stand-in worker process for LocalConnectorTest, run with `java FakeWorker.java worker --role R ...`:
// serves /health (200) on --metrics-port and, on POST /drain, answers 202 and exits 0 half a second later,
// as a drained worker does. With --fail-at-start it exits 3 at once, printing a reason; with
// --fail-after-ms N it does the same N ms later, never serving (a model that fails to load).
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.util.List;

public class FakeWorker {
  public static void main(String[] args) throws Exception {
    List<String> a = List.of(args);
    if (a.contains("--fail-at-start")) {
      System.out.println("fake worker: refusing to start (--fail-at-start)");
      System.exit(3);
    }
    if (a.contains("--fail-after-ms")) {
      Thread.sleep(Long.parseLong(a.get(a.indexOf("--fail-after-ms") + 1)));
      System.out.println("fake worker: the model failed to load (--fail-after-ms)");
      System.exit(4);
    }
    int port = Integer.parseInt(a.get(a.indexOf("--metrics-port") + 1));
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
    s.createContext("/health", ex -> { ex.sendResponseHeaders(200, -1); ex.close(); });
    s.createContext("/drain", ex -> {
      ex.sendResponseHeaders(202, -1);
      ex.close();
      new Thread(() -> { try { Thread.sleep(500); } catch (InterruptedException e) { } System.exit(0); }).start();
    });
    s.start();
    System.out.println("fake worker " + a.get(a.indexOf("--worker-id") + 1) + " serving");
  }
}
