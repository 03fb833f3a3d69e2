package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.model.DType;
import dev.tandem.frontend.http.FrontendServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The generated tiny model served with its weights quantized to Q8_0, then to Q4_0, at load, over
 * real HTTP: greedy completions repeat (text, and log-probabilities to rounding), differ in their
 * log-probabilities from the same model served as stored and from each other (the quantized weights
 * are what runs), the worker reports its weights' quantization in /health, and the KV blocks all
 * return.
 */
@org.junit.jupiter.api.Tag("e2e")
class QuantizedServeTest {
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The first worker's entry in the frontend's /health. */
  private static JsonNode healthOfWorker(LocalDeployment d) throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + d.port() + "/health")).build(),
        HttpResponse.BodyHandlers.ofString());
    return JSON.readTree(r.body()).at("/workers/0");
  }

  private static JsonNode complete(LocalDeployment d) throws Exception {
    String body = "{\"model\":\"tiny\",\"prompt\":\"The lighthouse keeper collects seashells and\",\"max_tokens\":8,"
        + "\"temperature\":0,\"logprobs\":1}";
    HttpResponse<String> r = TestDeployments.post(d, "/v1/completions", body);
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body()).at("/choices/0");
  }

  @Test
  void servesTheQuantizedWeights(@TempDir Path dir) throws Exception {
    Path model = TestDeployments.tinyModel(dir);
    FrontendServer.Config frontend = new FrontendServer.Config("127.0.0.1", 0, 1 << 20);
    JsonNode plain;
    try (LocalDeployment d = TestDeployments.builtin(model, 1, 2, frontend)) {
      plain = complete(d);
      assertTrue(healthOfWorker(d).path("weight_quantization").isMissingNode(), "weights as stored: nothing to report");
    }
    JsonNode q8 = servedQuantized(model, frontend, DType.Q8_0);
    assertNotEquals(plain.at("/logprobs/token_logprobs/0").asDouble(), q8.at("/logprobs/token_logprobs/0").asDouble(),
        "the first token's log-probability moves with the weights' rounding");
    // The tiny model's down projections (128 columns) are Q4_0, its other matrices (64) fall back to Q8_0.
    JsonNode q4 = servedQuantized(model, frontend, DType.Q4_0);
    assertNotEquals(q8.at("/logprobs/token_logprobs/0").asDouble(), q4.at("/logprobs/token_logprobs/0").asDouble(),
        "Q4_0 rounds the down projections more coarsely than Q8_0");
  }

  /** The first completion of {@code model} served with its weights quantized to {@code type}, checked as the class says. */
  private static JsonNode servedQuantized(Path model, FrontendServer.Config frontend, DType type) throws Exception {
    try (LocalDeployment d = TestDeployments.builtin(model, 1, 2, frontend, c -> c.withQuantization(type))) {
      JsonNode first = complete(d);
      JsonNode again = complete(d);
      assertFalse(first.path("text").asText().isEmpty());
      assertEquals(first.path("text"), again.path("text"), "greedy is deterministic");
      for (int i = 0; i < first.at("/logprobs/token_logprobs").size(); i++) { // the repeat reads the prompt's cached blocks: sums in another order
        assertEquals(first.at("/logprobs/token_logprobs").get(i).asDouble(), again.at("/logprobs/token_logprobs").get(i).asDouble(), 1e-4);
      }
      assertEquals(type.shortName(), healthOfWorker(d).path("weight_quantization").asText(), "the worker says so when it joins");
      TestDeployments.assertPoolsFull(d);
      return first;
    }
  }
}
