package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.sched.SpeculativeConfig;
import dev.tandem.frontend.http.FrontendServer;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The generated tiny model served with n-gram speculative decoding, over real HTTP: a greedy
 * completion of a prompt that quotes itself is the text and log-probabilities it is without
 * speculation, streamed or not, while the worker's counters show proposals run and kept, and the KV
 * blocks all return.
 */
@org.junit.jupiter.api.Tag("e2e")
class SpeculativeServeTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String PROMPT = "The keeper wrote: the sea is grey, the sea is cold, the sea is grey, the sea is cold, the sea is";

  private static HttpResponse<String> complete(LocalDeployment d, boolean stream) throws Exception {
    String body = "{\"model\":\"tiny\",\"prompt\":\"" + PROMPT + "\",\"max_tokens\":40,\"temperature\":0,\"logprobs\":1"
        + (stream ? ",\"stream\":true" : "") + "}";
    HttpResponse<String> r = TestDeployments.post(d, "/v1/completions", body);
    assertEquals(200, r.statusCode(), r.body());
    return r;
  }

  /** The text of a streamed completion, its chunks joined. */
  private static String streamedText(String sse) throws Exception {
    StringBuilder text = new StringBuilder();
    for (String line : sse.split("\n")) {
      if (line.startsWith("data: {")) {
        text.append(JSON.readTree(line.substring(6)).at("/choices/0/text").asText());
      }
    }
    return text.toString();
  }

  @Test
  void servesTheSameTokensWithProposalsKept(@TempDir Path dir) throws Exception {
    Path model = TestDeployments.tinyModel(dir);
    FrontendServer.Config frontend = new FrontendServer.Config("127.0.0.1", 0, 1 << 20);
    JsonNode plain;
    try (LocalDeployment d = TestDeployments.builtin(model, 1, 2, frontend)) {
      plain = JSON.readTree(complete(d, false).body()).at("/choices/0");
    }
    SpeculativeConfig ngram = SpeculativeConfig.parse("{\"method\": \"ngram\", \"num_speculative_tokens\": 4}", "test");
    try (LocalDeployment d = TestDeployments.builtin(model, 1, 2, frontend, c -> c.withSpeculative(ngram))) {
      JsonNode speculated = JSON.readTree(complete(d, false).body()).at("/choices/0");
      assertFalse(plain.path("text").asText().isEmpty());
      assertEquals(plain.path("text"), speculated.path("text"), "the same greedy text");
      assertEquals(40, speculated.at("/logprobs/token_logprobs").size(), "a log-probability for every token");
      for (int i = 0; i < 40; i++) {
        assertEquals(plain.at("/logprobs/token_logprobs").get(i).asDouble(), speculated.at("/logprobs/token_logprobs").get(i).asDouble(), 1e-3,
            "token " + i);
      }
      assertEquals(plain.path("text").asText(), streamedText(complete(d, true).body()), "streamed, the same text");
      String metrics = d.workers().getFirst().metrics().scrape();
      double drafted = TestDeployments.sample(metrics, "tandem_worker_engine_spec_decode_draft_tokens_total");
      double accepted = TestDeployments.sample(metrics, "tandem_worker_engine_spec_decode_accepted_tokens_total");
      assertTrue(drafted > 0 && accepted > 0 && accepted <= drafted, "drafted " + drafted + ", accepted " + accepted);
      TestDeployments.assertPoolsFull(d);
    }
  }
}
