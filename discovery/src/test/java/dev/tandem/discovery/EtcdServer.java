package dev.tandem.discovery;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A real etcd (Debian's {@code etcd-server}; {@code .ci/run} installs it) on free loopback ports,
 * with its data in a temp dir. {@link #stop} and {@link #start} again keep the data, as a restart of
 * a real member does. Tests that need one are skipped, naming the package, where it is missing.
 */
public final class EtcdServer implements AutoCloseable {
  private final Path dataDir;
  private final int clientPort;
  private final int peerPort;
  private Process process;

  private EtcdServer() throws IOException {
    this.dataDir = Files.createTempDirectory("tandem-etcd");
    this.clientPort = freePort();
    this.peerPort = freePort();
  }

  /** Starts one, or skips the calling test if etcd is not installed. */
  public static EtcdServer startOrSkip() throws Exception {
    Assumptions.assumeTrue(binary() != null, "etcd is not installed: apt-get install etcd-server (.ci/run installs it)");
    EtcdServer e = new EtcdServer();
    e.start();
    return e;
  }

  private static Path binary() {
    for (String dir : List.of("/usr/bin", "/usr/local/bin", "/usr/sbin")) {
      Path p = Path.of(dir, "etcd");
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + clientPort);
  }

  public synchronized void start() throws Exception {
    String peer = "http://127.0.0.1:" + peerPort;
    process = new ProcessBuilder(
            binary().toString(), "--name", "tandem-test", "--data-dir", dataDir.toString(),
            "--listen-client-urls", endpoint().toString(), "--advertise-client-urls", endpoint().toString(),
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", "tandem-test=" + peer, "--log-level", "error")
        .redirectErrorStream(true)
        .redirectOutput(dataDir.resolveSibling(dataDir.getFileName() + ".log").toFile())
        .start();
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException("etcd exited with " + process.exitValue() + "; see " + dataDir + ".log");
      }
      try {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(endpoint().resolve("/health")).timeout(Duration.ofSeconds(1)).build(),
            HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200 && r.body().contains("true")) {
          return;
        }
      } catch (IOException notYet) {
        // Not listening yet.
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException("etcd did not become healthy within 20 s at " + endpoint());
  }

  /** Kills etcd (SIGKILL, as a crash); the data stays for {@link #start}. */
  public synchronized void stop() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly().waitFor();
      process = null;
    }
  }

  @Override
  public void close() throws Exception {
    stop();
    try (Stream<Path> files = Files.walk(dataDir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
    Files.deleteIfExists(dataDir.resolveSibling(dataDir.getFileName() + ".log"));
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
