package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.frontend.http.FrontendServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model directory's generation_config.json over real HTTP, as vLLM reads it: its end-of-sequence
 * tokens end generation beside config.json's, and its sampling is what a request that sets none
 * gets (unless the frontend runs with {@code --generation-config none}).
 */
@Tag("e2e")
class GenerationConfigTest {
  /** A token config.json does not call an end of sequence; the generation config adds it. */
  private static final int MORE_EOS = 100;
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final ObjectMapper JSON = new ObjectMapper();
  @TempDir Path dir;

  private Path model() throws Exception {
    return TestDeployments.tinyModel(dir);
  }

  private LocalDeployment serve(Path model, String generationConfigJson, String flag) throws Exception {
    Files.writeString(model.resolve("generation_config.json"), generationConfigJson);
    return TestDeployments.builtin(model, 1, 2, new FrontendServer.Config("127.0.0.1", 0, 1 << 20, java.time.Duration.ZERO,
        dev.tandem.frontend.http.Admission.open(), "auto", "auto", FrontendServer.DEFAULT_MIGRATION_LIMIT, flag));
  }

  private static JsonNode post(LocalDeployment d, String path, String body) throws Exception {
    HttpResponse<String> r = HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + d.port() + path))
            .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  private static String story(LocalDeployment d) throws Exception {
    return post(d, "/v1/chat/completions", "{\"model\":\"tiny\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\","
        + "\"content\":\"Tell me about lighthouses.\"}]}").at("/choices/0/message/content").asText();
  }

  @Test
  void itsEndOfSequenceTokensEndGenerationAndItsSamplingIsTheDefault() throws Exception {
    Path model = model();
    int configEos = JSON.readTree(Files.readString(model.resolve("config.json"))).path("eos_token_id").asInt();
    try (LocalDeployment d = serve(model, "{\"eos_token_id\": [" + configEos + ", " + MORE_EOS + "], \"temperature\": 0.0}", "auto")) {
      // The biased token is the generation config's end of sequence: the completion stops there.
      JsonNode stopped = post(d, "/v1/completions",
          "{\"model\":\"tiny\",\"prompt\":\"hello\",\"max_tokens\":8,\"logit_bias\":{\"" + MORE_EOS + "\":100}}");
      assertEquals("stop", stopped.at("/choices/0/finish_reason").asText(), stopped.toString());
      // temperature 0 from the file: two requests that set none decode the same greedy text.
      assertEquals(story(d), story(d));
    }
  }

  @Test
  void withGenerationConfigNoneRequestsGetOpenAiSampling() throws Exception {
    try (LocalDeployment d = serve(model(), "{\"temperature\": 0.0}", "none")) {
      // temperature 1 over a random model's 151,936 tokens: two samples of 16 are never equal.
      assertNotEquals(story(d), story(d));
    }
  }
}
