package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.discovery.EtcdServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scale-out as a user runs it: a real etcd, worker processes that register there under a lease, and
 * a frontend process that finds them through it (nothing names a worker on its command line). A
 * worker killed with SIGKILL leaves routing within its TTL; a new one is routed to once registered;
 * a worker stopped with SIGTERM under 100 streaming requests drains: every request completes, and
 * it exits 0.
 */
@org.junit.jupiter.api.Tag("e2e")
class EtcdScaleOutTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int TTL_S = 3;
  private final List<Process> processes = new ArrayList<>();
  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private EtcdServer etcd;
  /** Each process's log; kept where a test fails, to read. */
  @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs;

  @AfterEach
  void stop() throws Exception {
    TestDeployments.stopAll(processes, false, 10);
    if (etcd != null) {
      etcd.close();
    }
  }

  private Process tandem(String name, String... args) throws IOException {
    List<String> cmd = TestDeployments.tandemCommand(args);
    cmd.addAll(List.of("--discovery", "etcd", "--etcd-endpoints", etcd.endpoint().toString(), "--discovery-ttl-s", Integer.toString(TTL_S)));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(logs.resolve(name + ".log").toFile()).start();
    processes.add(p);
    return p;
  }

  private Process worker(String id) throws IOException {
    return tandem(id, "worker", "--engine", "mocker", "--port", "0", "--metrics-port", "-1", "--worker-id", id);
  }

  private Set<String> workerIds(URI base) throws Exception {
    HttpResponse<String> r = client.send(HttpRequest.newBuilder(base.resolve("/health")).build(), HttpResponse.BodyHandlers.ofString());
    Set<String> ids = new HashSet<>();
    JSON.readTree(r.body()).path("workers").forEach(w -> ids.add(w.get("id").asText()));
    return ids;
  }


  /** The requests {@code worker} reported running, as the frontend's /health shows it. */
  private int activeOn(URI base, String worker) {
    try {
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(base.resolve("/health")).build(), HttpResponse.BodyHandlers.ofString());
      for (JsonNode w : JSON.readTree(r.body()).path("workers")) {
        if (w.path("id").asText().equals(worker)) {
          return w.path("active_requests").asInt();
        }
      }
    } catch (Exception e) {
      // not answering yet
    }
    return 0;
  }

  private BooleanSupplier idsAre(URI base, Set<String> expected) {
    return () -> {
      try {
        return workerIds(base).equals(expected);
      } catch (Exception e) {
        return false;
      }
    };
  }

  private CompletableFuture<HttpResponse<String>> stream(URI base, int i) {
    String body = """
        {"model": "%s", "prompt": "drain request %d", "max_tokens": 120, "stream": true, "ignore_eos": true, "tandem": {"timing": true}}"""
        .formatted(TestDeployments.MODEL, i);
    return client.sendAsync(HttpRequest.newBuilder(base.resolve("/v1/completions")).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void workersComeAndGoThroughEtcdAndADrainedWorkerFailsNoRequest() throws Exception {
    etcd = EtcdServer.startOrSkip();
    worker("w-a");
    Process b = worker("w-b");
    int http = TestDeployments.freePort();
    Process frontend = tandem("frontend", "frontend", "--host", "127.0.0.1", "--port", Integer.toString(http), "--router-mode", "round-robin");
    URI base = URI.create("http://127.0.0.1:" + http);
    TestDeployments.await("the frontend serves both workers found in etcd", 90, () -> {
      assertTrue(frontend.isAlive(), () -> read("frontend"));
      return idsAre(base, Set.of("w-a", "w-b")).getAsBoolean();
    });

    // SIGKILL: the worker cannot leave; its lease runs out.
    Process a = processes.getFirst();
    long killed = System.nanoTime();
    a.destroyForcibly().waitFor();
    TestDeployments.await("w-a gone after SIGKILL", TTL_S + 5, idsAre(base, Set.of("w-b")));
    double leftAfterS = (System.nanoTime() - killed) / 1e9;
    assertTrue(leftAfterS <= TTL_S + 2, "w-a left routing " + leftAfterS + " s after its kill; TTL is " + TTL_S + " s");

    // A new worker joins and is routed to.
    worker("w-c");
    TestDeployments.await("w-c joins", 60, idsAre(base, Set.of("w-b", "w-c")));

    // SIGTERM under load: 100 streams in flight, then 20 more while w-b drains.
    List<CompletableFuture<HttpResponse<String>>> requests = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      requests.add(stream(base, i));
    }
    TestDeployments.await("w-b serving at least 20 of the streams", 60, () -> activeOn(base, "w-b") >= 20);
    b.destroy(); // SIGTERM
    for (int i = 100; i < 120; i++) {
      requests.add(stream(base, i));
      Thread.sleep(20);
    }
    int failed = 0;
    int servedByDrained = 0;
    StringBuilder failures = new StringBuilder();
    for (var f : requests) {
      HttpResponse<String> r = f.get(120, TimeUnit.SECONDS);
      if (r.body().contains("\"w-b\"")) {
        servedByDrained++;
      }
      if (r.statusCode() != 200 || !r.body().contains("data: [DONE]") || !r.body().contains("\"finish_reason\":\"length\"")) {
        failed++;
        failures.append(r.statusCode()).append(' ').append(r.body(), 0, Math.min(300, r.body().length())).append('\n');
      }
    }
    assertEquals(0, failed, failures::toString);
    assertTrue(servedByDrained >= 20, "the drained worker was serving " + servedByDrained + " of the streams when SIGTERM came");
    assertTrue(b.waitFor(60, TimeUnit.SECONDS), "w-b did not exit after draining");
    assertEquals(0, b.exitValue(), () -> "w-b's exit after SIGTERM; log:\n" + read("w-b"));
    assertTrue(!read("w-b").contains("drain timed out"), () -> read("w-b"));
    TestDeployments.await("w-b gone after its drain", 10, idsAre(base, Set.of("w-c")));

    // The rest keeps serving.
    HttpResponse<String> after = stream(base, 999).get(30, TimeUnit.SECONDS);
    assertEquals(200, after.statusCode(), after.body());
    assertTrue(after.body().contains("data: [DONE]"));
  }

  private String read(String name) {
    try {
      return Files.readString(logs.resolve(name + ".log"));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }
}
