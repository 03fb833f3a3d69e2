package dev.tandem.frontend.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.TokenChunk;
import dev.tandem.engine.ModelFiles;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.text.TextTokenizer;
import dev.tandem.router.TokenListener;
import io.netty.channel.embedded.EmbeddedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * An embeddings request through the HTTP handler on an {@link EmbeddedChannel} (no socket),
 * against {@link GenerationRunTest.ScriptedRouter}: what each input asks its worker for, the
 * vectors written back in order, a failed input tried again, a worker's bad answer as an error.
 */
class EmbeddingRunTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TextTokenizer TOKENIZER = TextTokenizer.fromJson(ModelFiles.bundledQwen3().tokenizerJson(), "qwen3");
  private static final ServedModel MODEL =
      new ServedModel("m", 4096, 151_936, "test", Set.of("embeddings"), new int[] {151645}, TOKENIZER, null);

  @AfterAll
  static void close() {
    TOKENIZER.close();
  }

  /** A worker's answer to an embedding request: one (discarded) token, and the vector {first, 4, 0}. */
  private static void embeds(GenerationRequest r, TokenListener l) {
    float[] hidden = {r.promptTokens()[0], 4, 0};
    l.onChunk(new TokenChunk(new int[] {7}, null, FinishReason.LENGTH, r.promptTokens().length, 1,
        new TokenChunk.Origin("w0", 10, "", "", 0, 0, 0), null, hidden));
    l.onCompleted();
  }

  private static JsonNode post(GenerationRunTest.ScriptedRouter router, FrontendMetrics metrics, String body, int status) throws Exception {
    EmbeddedChannel ch = new EmbeddedChannel(new HttpApiHandler(MODEL, router, metrics, 0, Duration.ZERO));
    GenerationRunTest.post(ch, "/v1/embeddings", body);
    GenerationRunTest.Written w = GenerationRunTest.drain(ch);
    assertEquals(status, w.status(), w.body());
    return JSON.readTree(w.body());
  }

  @Test
  void eachInputIsAOneTokenGenerationAskingForItsEmbeddingAndTheVectorsComeBackInOrder() throws Exception {
    var router = new GenerationRunTest.ScriptedRouter(EmbeddingRunTest::embeds);
    JsonNode body = post(router, new FrontendMetrics(), "{\"model\":\"m\",\"input\":[[3,1,2],[6]],\"priority\":0}", 200);
    assertEquals(2, router.routed.size());
    for (GenerationRequest r : router.routed) {
      assertTrue(r.embed(), "asks for the embedding");
      assertEquals(1, r.stop().maxTokens());
      assertTrue(r.sampling().isGreedy());
    }
    assertEquals("[0.6,0.8,0.0]", body.at("/data/0/embedding").toString(), "{3, 4, 0} at unit length");
    assertEquals(1, body.at("/data/1/index").asInt());
    assertEquals(6 / Math.sqrt(52), body.at("/data/1/embedding/0").asDouble(), 1e-6);
    assertEquals(4, body.at("/usage/prompt_tokens").asInt(), "3 + 1 input tokens");
    assertTrue(router.cancels.isEmpty(), "finished generations are not cancelled");
    assertEquals(0, router.released, "every route was started");
    JsonNode raw = post(router, new FrontendMetrics(), "{\"model\":\"m\",\"input\":[3],\"normalize\":false,\"encoding_format\":\"base64\"}",
        200);
    java.nio.ByteBuffer bytes = java.nio.ByteBuffer.wrap(java.util.Base64.getDecoder().decode(raw.at("/data/0/embedding").asText()))
        .order(java.nio.ByteOrder.LITTLE_ENDIAN);
    float[] v = new float[3];
    bytes.asFloatBuffer().get(v);
    assertArrayEquals(new float[] {3, 4, 0}, v, "as the worker sent it, little-endian float32");
  }

  @Test
  void anInputWhoseWorkerFailsIsTriedAgainOnAnother() throws Exception {
    List<Integer> calls = new ArrayList<>();
    var router = new GenerationRunTest.ScriptedRouter((r, l) -> {
      calls.add(1);
      if (calls.size() == 1) {
        l.onError(new GenerationException(GenerationException.Kind.UNAVAILABLE, "UNAVAILABLE", "worker went away", null));
      } else {
        embeds(r, l);
      }
    });
    FrontendMetrics metrics = new FrontendMetrics();
    JsonNode body = post(router, metrics, "{\"model\":\"m\",\"input\":[[3],[3]]}", 200);
    assertEquals(2, body.get("data").size());
    assertEquals(3, router.routed.size(), "the failed input once more");
    assertTrue(router.routed.get(2).requestId().endsWith("-m1"), router.routed.get(2).requestId());
    assertEquals(1, metrics.migrations());
  }

  @Test
  void aWorkerThatEndsWithoutTheEmbeddingOrRefusesIsAnError() throws Exception {
    var silent = new GenerationRunTest.ScriptedRouter((r, l) -> l.onChunk(GenerationRunTest.chunk(new int[] {7}, FinishReason.LENGTH)));
    JsonNode error = post(silent, new FrontendMetrics(), "{\"model\":\"m\",\"input\":\"hello\"}", 500);
    assertTrue(error.at("/error/message").asText().contains("without its embedding"), error.toString());
    var refusing = new GenerationRunTest.ScriptedRouter((r, l) -> l.onError(
        new GenerationException(GenerationException.Kind.INVALID_REQUEST, "INVALID_ARGUMENT", "embeddings: no hidden states", null)));
    post(refusing, new FrontendMetrics(), "{\"model\":\"m\",\"input\":\"hi\"}", 400);
    assertEquals(1, refusing.routed.size(), "a refusal is not tried elsewhere");
    var none = new GenerationRunTest.ScriptedRouter(EmbeddingRunTest::embeds);
    none.noWorker = true;
    post(none, new FrontendMetrics(), "{\"model\":\"m\",\"input\":\"hi\"}", 503);
  }

  @Test
  void aVectorIsCutThenNormalizedAsVllmsPoolerDoes() {
    float[] hidden = {3, 4, 12, 0};
    assertArrayEquals(new float[] {3f / 13, 4f / 13, 12f / 13, 0}, EmbeddingRun.pooled(hidden, 0, true), 1e-7f);
    assertArrayEquals(new float[] {0.6f, 0.8f}, EmbeddingRun.pooled(hidden, 2, true), 1e-7f, "the first two, then unit length");
    assertArrayEquals(new float[] {3, 4}, EmbeddingRun.pooled(hidden, 2, false), "normalize false: the values as they are");
    assertArrayEquals(new float[] {0, 0}, EmbeddingRun.pooled(new float[] {0, 0}, 0, true), "a zero vector stays zero");
    assertArrayEquals(new float[] {3, 4, 12, 0}, hidden, "the hidden state itself is not changed");
  }
}
