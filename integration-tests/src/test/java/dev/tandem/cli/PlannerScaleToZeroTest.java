package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.discovery.EtcdServer;
import dev.tandem.planner.ProfileJson;
import dev.tandem.planner.sim.MockerProfile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The planner as a user runs it: a real etcd, a frontend process that waits for workers
 * ({@code --worker-wait-s}), and {@code tandem planner --connector local} starting mocker worker
 * processes from a profile. Traffic is served; with no traffic the pool goes to zero (the worker is
 * drained and exits); the next requests wait at the frontend while the planner starts a worker, and
 * all of them succeed.
 */
@Tag("e2e")
class PlannerScaleToZeroTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final List<Process> processes = new ArrayList<>();
  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private EtcdServer etcd;

  @AfterEach
  void stop() throws Exception {
    TestDeployments.stopAll(processes, true, 30); // SIGTERM: the planner drains the workers it started
    if (etcd != null) {
      etcd.close();
    }
  }

  private double metric(URI planner, String line) {
    try {
      String body = client.send(HttpRequest.newBuilder(planner.resolve("/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
      Matcher m = Pattern.compile("^" + Pattern.quote(line) + " ([0-9.eE+-]+)$", Pattern.MULTILINE).matcher(body);
      return m.find() ? Double.parseDouble(m.group(1)) : Double.NaN;
    } catch (Exception e) {
      return Double.NaN;
    }
  }

  private CompletableFuture<HttpResponse<String>> complete(URI frontend, String model) {
    String body = "{\"model\":\"" + model + "\",\"prompt\":\"hello there\",\"max_tokens\":8}";
    return client.sendAsync(HttpRequest.newBuilder(frontend.resolve("/v1/completions")).timeout(Duration.ofSeconds(120))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void scalesToZeroWhenIdleAndBackForTheNextRequestWithoutFailingAny() throws Exception {
    etcd = EtcdServer.startOrSkip();
    Path logs = Path.of("target", "planner-scale-to-zero");
    if (Files.exists(logs)) { // an earlier run's worker logs would be counted as this run's workers
      try (var old = Files.walk(logs)) {
        old.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
    Files.createDirectories(logs);
    Path profile = logs.resolve("profile.json");
    ProfileJson.write(MockerProfile.defaults(), profile);
    String etcdUrl = etcd.endpoint().toString();
    int frontendPort = TestDeployments.freePort();
    int plannerPort = TestDeployments.freePort();
    processes.add(new ProcessBuilder(TestDeployments.tandemCommand("frontend", "--host", "127.0.0.1", "--port", Integer.toString(frontendPort),
            "--worker-wait-s", "90", "--discovery", "etcd", "--etcd-endpoints", etcdUrl))
        .redirectErrorStream(true).redirectOutput(logs.resolve("frontend.log").toFile()).start());
    processes.add(new ProcessBuilder(TestDeployments.tandemCommand("planner", "--connector", "local", "--profile", profile.toString(),
            "--frontend-url", "http://127.0.0.1:" + frontendPort, "--interval-s", "1", "--startup-s", "2",
            "--prefill-max", "0", "--decode-role", "agg", "--decode-min", "0", "--decode-max", "2",
            "--idle-intervals-to-zero", "4", "--grace-intervals", "1", "--metrics-port", Integer.toString(plannerPort),
            "--log-dir", logs.resolve("workers").toString(),
            "--worker-args", "--engine mocker --discovery etcd --etcd-endpoints " + etcdUrl + " --discovery-ttl-s 3"))
        .redirectErrorStream(true).redirectOutput(logs.resolve("planner.log").toFile()).start());
    URI frontend = URI.create("http://127.0.0.1:" + frontendPort);
    URI planner = URI.create("http://127.0.0.1:" + plannerPort);
    TestDeployments.await("the frontend to serve (the planner starts its first worker)", 90, () -> {
      try {
        return client.send(HttpRequest.newBuilder(frontend.resolve("/v1/models")).build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
      } catch (Exception e) {
        return false;
      }
    });
    String model = JSON.readTree(client.send(HttpRequest.newBuilder(frontend.resolve("/v1/models")).build(),
        HttpResponse.BodyHandlers.ofString()).body()).path("data").get(0).path("id").asText();
    List<CompletableFuture<HttpResponse<String>>> first = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      first.add(complete(frontend, model));
    }
    for (var f : first) {
      assertEquals(200, f.get(120, TimeUnit.SECONDS).statusCode(), f.get().body());
    }
    String down = "tandem_planner_decisions_total{direction=\"down\",pool=\"decode\"}";
    TestDeployments.await("the idle pool to go to zero", 60,
        () -> metric(planner, down) >= 1 && metric(planner, "tandem_planner_desired_replicas{pool=\"decode\"}") == 0
            && metric(planner, "tandem_planner_actual_replicas{pool=\"decode\"}") == 0);
    Path workers = logs.resolve("workers");
    TestDeployments.await("the drained worker to exit", 30, () -> {
      try (var s = Files.list(workers)) {
        return s.count() == 1 && ProcessHandle.current().descendants().noneMatch(h -> h.info().commandLine().orElse("").contains("local-decode-0"));
      } catch (java.io.IOException e) {
        return false;
      }
    });
    List<CompletableFuture<HttpResponse<String>>> after = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      after.add(complete(frontend, model)); // nobody serves: these wait at the frontend
    }
    for (var f : after) {
      HttpResponse<String> r = f.get(120, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode(), "a request after scale-to-zero waits, it does not fail: " + r.body());
    }
    assertTrue(metric(planner, "tandem_planner_decisions_total{direction=\"up\",pool=\"decode\"}") >= 1, "scaled up from zero");
    try (var s = Files.list(workers)) {
      assertEquals(2, s.count(), "a second worker was started for the requests after the pause");
    }
  }
}
