package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
 * prompt and the tokens so far, and the client sees one stream — greedy text (frequency and
 * presence penalties included) identical to an undisturbed run, no error event, one [DONE]. Three built-in workers on a generated model (each
 * test kills one).
 */
@org.junit.jupiter.api.Tag("e2e")
class MigrationTest {
  @TempDir static Path dir;
  private static LocalDeployment deployment;
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final ObjectMapper JSON = new ObjectMapper();
  // Penalised: the new worker must count the tokens so far as output for the text to be the same.
  private static final String BODY = "{\"model\":\"tiny\",\"max_tokens\":600,\"temperature\":0,\"ignore_eos\":true,"
      + "\"frequency_penalty\":0.5,\"presence_penalty\":0.5,"
      + "\"messages\":[{\"role\":\"user\",\"content\":\"Tell me about lighthouses.\"}]";

  @BeforeAll
  static void start() throws Exception {
    deployment = TestDeployments.builtinTiny(dir, 3, 1);
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
    double before = migrations();
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
        Thread.ofPlatform().start(victim::kill); // the worker dies mid-stream
      }
    }
    assertTrue(done, "the stream ended with [DONE]");
    assertFalse(events.stream().anyMatch(e -> e.has("error")), "no error event");
    assertEquals(expected, text.toString(), "the same greedy text as the undisturbed run");
    assertEquals(600, events.getLast().at("/usage/completion_tokens").asInt());
    assertEquals(before + 1, migrations(), "one migration counted");
  }

  private static double migrations() throws Exception {
    return TestDeployments.metric(URI.create("http://127.0.0.1:" + deployment.port() + "/metrics"), "tandem_frontend_migrations_total");
  }

  @Test
  void aStructuredOutputResumesItsGrammarOnTheOtherWorker() throws Exception {
    String body = "{\"model\":\"tiny\",\"max_tokens\":400,\"temperature\":0,"
        + "\"messages\":[{\"role\":\"user\",\"content\":\"Write a note.\"}],"
        + "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"object\","
        + "\"properties\":{\"note\":{\"type\":\"string\",\"minLength\":200}},\"required\":[\"note\"]}}}";
    String expected = JSON.readTree(HTTP.send(post(body + "}"), HttpResponse.BodyHandlers.ofString()).body())
        .at("/choices/0/message/content").asText();
    assertTrue(JSON.readTree(expected).get("note").asText().length() >= 200, expected);
    HttpResponse<Stream<String>> r = HTTP.send(post(body + ",\"stream\":true}"), HttpResponse.BodyHandlers.ofLines());
    StringBuilder text = new StringBuilder();
    int events = 0;
    boolean killed = false;
    for (Iterator<String> lines = r.body().iterator(); lines.hasNext(); ) {
      String line = lines.next();
      if (!line.startsWith("data: {")) {
        continue;
      }
      JsonNode e = JSON.readTree(line.substring(6));
      assertFalse(e.has("error"), line);
      text.append(e.at("/choices/0/delta/content").asText(""));
      if (!killed && ++events == 30) {
        WorkerServer victim = serving();
        assertNotNull(victim);
        Thread.ofPlatform().start(victim::kill);
        killed = true;
      }
    }
    assertTrue(killed);
    assertEquals(expected, text.toString(), "the same constrained output, its grammar resumed mid-string");
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
