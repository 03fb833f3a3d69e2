package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/** The frontend and two workers as separate processes on loopback, started through the CLI. */
@org.junit.jupiter.api.Tag("e2e")
class MultiProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void stop() throws InterruptedException {
    TestDeployments.stopAll(processes, true, 10);
  }

  private Process tandem(Path log, String... args) throws IOException {
    Process p = new ProcessBuilder(TestDeployments.tandemCommand(args)).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    return p;
  }

  /** Each cluster's process logs; kept where a test fails, to read. */
  @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logsRoot;

  /**
   * Starts two worker processes and a frontend process, each on a port it chose itself; returns
   * the frontend's base URI once healthy.
   */
  private URI startCluster(String routerMode) throws Exception {
    Path logs = Files.createTempDirectory(logsRoot, "cluster");
    List<String> workers = new ArrayList<>();
    for (String id : List.of("proc-w0", "proc-w1")) {
      Path log = logs.resolve(id + ".log");
      Process w = tandem(log, "worker", "--engine", "mocker", "--port", "0", "--metrics-port", "-1", "--worker-id", id, "--speedup-ratio", "0");
      workers.add("127.0.0.1:" + TestDeployments.printedPort(w, log, TestDeployments.WORKER_LISTENING, 60));
    }
    Path feLog = logs.resolve("fe.log");
    Process frontend = tandem(feLog, "frontend", "--host", "127.0.0.1", "--port", "0",
        "--worker", String.join(",", workers), "--router-mode", routerMode);
    URI base = URI.create("http://127.0.0.1:" + TestDeployments.printedPort(frontend, feLog, TestDeployments.FRONTEND_SERVING, 60));
    HttpResponse<String> health = client.send(HttpRequest.newBuilder(base.resolve("/health")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, health.statusCode(), () -> read(feLog));
    assertEquals(2, JSON.readTree(health.body()).get("workers").size());
    return base;
  }

  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private JsonNode complete(URI base, String body) throws Exception {
    HttpResponse<String> r = client.send(HttpRequest.newBuilder(base.resolve("/v1/completions"))
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  @Test
  void frontendRoutesAcrossTwoWorkerProcesses() throws Exception {
    URI base = startCluster("round-robin");
    Set<String> workersSeen = new HashSet<>();
    for (int i = 0; i < 4; i++) {
      JsonNode body = complete(base, """
          {"model": "%s", "prompt": "request %d", "max_tokens": 4, "tandem": {"timing": true}}""".formatted(TestDeployments.MODEL, i));
      assertEquals(4, body.at("/usage/completion_tokens").asInt());
      body.at("/tandem/worker_ids").forEach(w -> workersSeen.add(w.asText()));
    }
    assertEquals(Set.of("proc-w0", "proc-w1"), workersSeen, "round-robin reaches both worker processes");
  }

  @Test
  void kvRoutingKeepsEachPrefixFamilyOnOneWorkerProcess() throws Exception {
    URI base = startCluster("kv");
    Set<String> all = new HashSet<>();
    for (int family = 0; family < 4; family++) {
      Set<String> workers = new HashSet<>();
      for (int i = 0; i < 3; i++) {
        int base0 = 2000 + 1000 * family;
        String prompt = IntStream.range(0, 200).mapToObj(t -> Integer.toString(base0 + t))
            .collect(Collectors.joining(",")) + "," + (90_000 + i);
        JsonNode body = complete(base, """
            {"model": "%s", "prompt": [%s], "max_tokens": 2, "tandem": {"timing": true}}""".formatted(TestDeployments.MODEL, prompt));
        body.at("/tandem/worker_ids").forEach(w -> workers.add(w.asText()));
        if (i > 0) {
          assertEquals(192, body.at("/usage/prompt_tokens_details/cached_tokens").asInt(), "family " + family + " request " + i);
        }
        Thread.sleep(100); // let the stored events of this request reach the frontend's router
      }
      assertEquals(1, workers.size(), "family " + family + " went to " + workers);
      all.addAll(workers);
    }
    assertEquals(2, all.size(), "families spread over both workers: " + all);
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

}
