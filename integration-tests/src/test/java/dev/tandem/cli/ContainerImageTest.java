package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The container image's file tree (deploy/docker/image-tree.sh, which the Dockerfile runs) holds
 * everything Tandem needs: no Docker engine runs here, so the test builds the tree and runs its
 * entry point with an empty environment (no JAVA_HOME, no JDK on the PATH, no Maven repository):
 * it creates a model with random weights and serves it with the builtin engine over HTTP.
 */
@org.junit.jupiter.api.Tag("e2e")
class ContainerImageTest {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  private static Process run(Path log, Path home, String... args) throws IOException {
    List<String> cmd = new java.util.ArrayList<>(List.of("env", "-i", "PATH=/usr/bin:/bin", "HOME=" + home));
    cmd.add(Path.of("target", "image", "opt", "tandem", "bin", "tandem").toAbsolutePath().toString());
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  @Test
  void theImageTreeServesAModelWithNothingFromOutside(@TempDir(cleanup = CleanupMode.ON_SUCCESS) Path work) throws Exception {
    Process build = new ProcessBuilder(ROOT.resolve("deploy/docker/image-tree.sh").toString(), Path.of("target", "image").toAbsolutePath().toString())
        .redirectErrorStream(true).start();
    String buildLog = new String(build.getInputStream().readAllBytes());
    assertTrue(build.waitFor(300, TimeUnit.SECONDS));
    assertEquals(0, build.exitValue(), buildLog);
    assertTrue(Files.isExecutable(Path.of("target/image/opt/tandem/java/bin/java")), "a Java runtime in the tree");

    Process create = run(work.resolve("create.log"), work, "model", "create", "--shape", "tiny", "--out", work.resolve("tiny").toString());
    assertTrue(create.waitFor(120, TimeUnit.SECONDS));
    assertEquals(0, create.exitValue(), Files.readString(work.resolve("create.log")));

    int port = TestDeployments.freePort();
    Process serve = run(work.resolve("serve.log"), work, "serve", "--host", "127.0.0.1", "--port", Integer.toString(port),
        "--model", work.resolve("tiny").toString(), "--kv-cache-memory", "64m");
    try {
      HttpClient http = HttpClient.newHttpClient();
      URI base = URI.create("http://127.0.0.1:" + port);
      HttpResponse<String> health = null;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (System.nanoTime() < deadline) {
        assertTrue(serve.isAlive(), () -> read(work.resolve("serve.log")));
        try {
          health = http.send(HttpRequest.newBuilder(base.resolve("/health")).build(), HttpResponse.BodyHandlers.ofString());
          if (health.statusCode() == 200) {
            break;
          }
        } catch (IOException notYet) {
          // still starting
        }
        Thread.sleep(200);
      }
      assertEquals(200, health.statusCode(), () -> read(work.resolve("serve.log")));
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(base.resolve("/v1/chat/completions"))
          .POST(HttpRequest.BodyPublishers.ofString(
              "{\"model\":\"tiny\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hello from the image\"}]}"))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), r.body());
      assertEquals(8, new ObjectMapper().readTree(r.body()).at("/usage/completion_tokens").asInt(), r.body());
    } finally {
      serve.destroy();
      serve.waitFor(30, TimeUnit.SECONDS);
    }
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      return "(no log)";
    }
  }
}
