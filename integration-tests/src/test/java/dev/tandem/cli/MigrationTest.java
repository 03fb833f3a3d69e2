package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.router.grpc.Router;
import dev.tandem.worker.WorkerServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker that dies mid-stream: the frontend continues the stream on the other worker with the
 * prompt and the tokens so far, and the client sees one stream — greedy text identical to an
 * undisturbed run, no error event, one [DONE]. Two built-in workers on a generated model.
 */
@org.junit.jupiter.api.Tag("e2e")
class MigrationTest {
  @TempDir static Path dir;
  private static LocalDeployment deployment;
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BODY = "{\"model\":\"tiny\",\"max_tokens\":600,\"temperature\":0,\"ignore_eos\":true,"
      + "\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about lighthouses.\"}]";

  @BeforeAll
  static void start() throws Exception {
    Path model = dir.resolve("tiny");
    ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 0, model, 0);
    BuiltinConfig config = BuiltinConfig.of(model).withCompute("cpu", 1).withKvCacheBytes(64L << 20);
    deployment = LocalDeployment.start(
        new LocalDeployment.Spec(
            2, () -> BuiltinEngine.open(config), ModelFiles.fromDirectory(model), 16,
            Router.Config.of("kv"), new FrontendServer.Config("127.0.0.1", 0, 1 << 20)));
  }

  @AfterAll
  static void stop() {
    deployment.close();
  }

  private static HttpRequest post(String body) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + deployment.port() + "/v1/chat/completions"))
        .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
  }

  @Test
  void aStreamWhoseWorkerDiesContinuesOnTheOtherWithTheSameText() throws Exception {
    JsonNode undisturbed = JSON.readTree(HTTP.send(post(BODY + "}"), HttpResponse.BodyHandlers.ofString()).body());
    String expected = undisturbed.at("/choices/0/message/content").asText();
    assertEquals(600, undisturbed.at("/usage/completion_tokens").asInt());

    HttpResponse<Stream<String>> r = HTTP.send(post(BODY + ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}"),
        HttpResponse.BodyHandlers.ofLines());
    StringBuilder text = new StringBuilder();
    List<JsonNode> events = new ArrayList<>();
    boolean done = false;
    WorkerServer killed = null;
    for (Iterator<String> lines = r.body().iterator(); lines.hasNext(); ) {
      String line = lines.next();
      if (!line.startsWith("data: ")) {
        continue;
      }
      if (line.equals("data: [DONE]")) {
        done = true;
        continue;
      }
      JsonNode e = JSON.readTree(line.substring(6));
      events.add(e);
      text.append(e.at("/choices/0/delta/content").asText(""));
      if (killed == null && events.size() == 40) {
        killed = serving();
        assertNotNull(killed, "one worker is serving the stream");
        WorkerServer victim = killed;
        Thread.ofPlatform().start(victim::close); // the worker goes away mid-stream
      }
    }
    assertTrue(done, "the stream ended with [DONE]");
    assertFalse(events.stream().anyMatch(e -> e.has("error")), "no error event");
    assertEquals(expected, text.toString(), "the same greedy text as the undisturbed run");
    assertEquals(600, events.getLast().at("/usage/completion_tokens").asInt());
    String metrics = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + deployment.port() + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    assertTrue(metrics.contains("tandem_frontend_migrations_total 1.0"), "one migration counted");
  }

  private static WorkerServer serving() throws Exception {
    for (int attempt = 0; attempt < 100; attempt++) {
      for (WorkerServer w : deployment.workers()) {
        if (w.loop().load().runningRequests() > 0) {
          return w;
        }
      }
      Thread.sleep(5);
    }
    return null;
  }
}
