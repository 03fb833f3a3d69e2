package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.mocker.TimingModel;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A worker that dies mid-request: the client gets a clean OpenAI-shaped error, nothing hangs. */
@org.junit.jupiter.api.Tag("e2e")
class WorkerFailureTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void streamingClientGetsAnErrorEventAndNoDone() throws Exception {
    try (LocalDeployment d = TestDeployments.start(1, TimingModel.realTime(), 1 << 20)) {
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      String body = """
          {"model": "%s", "messages": [{"role": "user", "content": "long"}], "max_tokens": 3000,
           "ignore_eos": true, "stream": true}""".formatted(TestDeployments.MODEL);
      HttpResponse<java.io.InputStream> r = http.send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + d.port() + "/v1/chat/completions"))
              .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
          HttpResponse.BodyHandlers.ofInputStream());
      assertEquals(200, r.statusCode());
      List<String> events = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      try (BufferedReader in = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
        String line;
        boolean killed = false;
        while ((line = in.readLine()) != null && System.nanoTime() < deadline) {
          if (!line.startsWith("data: ")) {
            continue;
          }
          events.add(line.substring(6));
          if (!killed && events.size() == 4) {
            d.workers().getFirst().kill(); // the worker dies mid-stream
            killed = true;
          }
        }
      }
      assertTrue(!events.contains("[DONE]"), "a failed stream must not end like a complete one: " + events);
      JsonNode error = JSON.readTree(events.getLast()).get("error");
      assertTrue(error != null, "the stream ends with an error event: " + events.subList(Math.max(0, events.size() - 3), events.size()));
      assertEquals("service_unavailable", error.get("type").asText());
      assertTrue(error.get("message").asText().contains("worker-0"), error.toString());
    }
  }
}
