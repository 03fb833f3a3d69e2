package dev.tandem.frontend.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.TokenChunk;
import dev.tandem.engine.ModelFiles;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.text.TextTokenizer;
import dev.tandem.router.TokenListener;
import io.netty.channel.embedded.EmbeddedChannel;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Score and rerank requests through the HTTP handler on an {@link EmbeddedChannel} (no socket),
 * against {@link GenerationRunTest.ScriptedRouter} whose workers answer each text with a vector
 * chosen by its first token: what is embedded, the scores computed from the vectors, the ranking.
 */
class ScoreRunTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TextTokenizer TOKENIZER = TextTokenizer.fromJson(ModelFiles.bundledQwen3().tokenizerJson(), "qwen3");
  private static final ServedModel MODEL =
      new ServedModel("m", 4096, 151_936, "test", Set.of("embeddings"), new int[] {151645}, TOKENIZER, null);
  private static final int SEA = TOKENIZER.encode("sea", true)[0];
  private static final int SHORE = TOKENIZER.encode("shore", true)[0];

  @AfterAll
  static void close() {
    TOKENIZER.close();
  }

  /** A worker's answer to a request for its pooled output: one (discarded) token, and {@code pooled}. */
  private static void answers(GenerationRequest r, TokenListener l, float[] pooled) {
    l.onChunk(new TokenChunk(new int[] {7}, null, FinishReason.LENGTH, r.promptTokens().length, 0,
        new TokenChunk.Origin("w0", 10, "", "", 0, 0, 0), null, pooled));
    l.onCompleted();
  }

  /** "sea" → (3, 4), "shore" → (4, 3), anything else → (0, 5): cosines 24/25 and 4/5 against "sea". */
  private static void embeds(GenerationRequest r, TokenListener l) {
    int first = r.promptTokens()[0];
    answers(r, l, first == SEA ? new float[] {3, 4} : first == SHORE ? new float[] {4, 3} : new float[] {0, 5});
  }

  /** What {@code model}'s handler writes back for {@code body} posted to {@code path}. */
  private static GenerationRunTest.Written written(ServedModel model, GenerationRunTest.ScriptedRouter router, FrontendMetrics metrics,
      String path, String body) {
    EmbeddedChannel ch = new EmbeddedChannel(new HttpApiHandler(model, router, metrics, 0, Duration.ZERO));
    GenerationRunTest.post(ch, path, body);
    return GenerationRunTest.drain(ch);
  }

  private static JsonNode post(GenerationRunTest.ScriptedRouter router, FrontendMetrics metrics, String path, String body, int status)
      throws Exception {
    GenerationRunTest.Written w = written(MODEL, router, metrics, path, body);
    assertEquals(status, w.status(), w.body());
    return JSON.readTree(w.body());
  }

  @Test
  void aScoreIsTheCosineOfTheTwoTextsEmbeddings() throws Exception {
    var router = new GenerationRunTest.ScriptedRouter(ScoreRunTest::embeds);
    FrontendMetrics metrics = new FrontendMetrics();
    JsonNode body = post(router, metrics, "/v1/score", "{\"model\":\"m\",\"text_1\":\"sea\",\"text_2\":[\"shore\",\"sea\",\"x\"]}", 200);
    assertEquals(4, router.routed.size(), "the query once, then each text");
    assertTrue(router.routed.stream().allMatch(GenerationRequest::embed));
    assertEquals("list", body.get("object").asText());
    assertTrue(body.get("id").asText().startsWith("score-"), body.toString());
    assertEquals(3, body.get("data").size());
    assertEquals(24.0 / 25, body.at("/data/0/score").asDouble(), 1e-6);
    assertEquals(1.0, body.at("/data/1/score").asDouble(), 1e-6);
    assertEquals(0.8, body.at("/data/2/score").asDouble(), 1e-6);
    assertEquals("score", body.at("/data/2/object").asText());
    assertEquals(2, body.at("/data/2/index").asInt());
    assertEquals(4, body.at("/usage/prompt_tokens").asInt(), "every embedded text's tokens");
    assertEquals(0, body.at("/usage/completion_tokens").asInt());
    assertEquals(1, metrics.registry().find(dev.tandem.frontend.MetricNames.REQUESTS).tag("endpoint", "score").tag("status", "200").counter()
        .count(), "counted as a score request");
  }

  @Test
  void rerankOrdersTheDocumentsBestFirstAndKeepsTheTopN() throws Exception {
    var router = new GenerationRunTest.ScriptedRouter(ScoreRunTest::embeds);
    String docs = "\"documents\":[\"x\",\"shore\",{\"text\":\"sea\"}]";
    for (String path : new String[] {"/rerank", "/v1/rerank", "/v2/rerank"}) {
      JsonNode body = post(router, new FrontendMetrics(), path, "{\"model\":\"m\",\"query\":\"sea\"," + docs + "}", 200);
      assertTrue(body.get("id").asText().startsWith("rerank-"), body.toString());
      JsonNode results = body.get("results");
      assertEquals(3, results.size(), path);
      assertEquals(2, results.at("/0/index").asInt(), "the same text first");
      assertEquals("sea", results.at("/0/document/text").asText());
      assertEquals(1.0, results.at("/0/relevance_score").asDouble(), 1e-6);
      assertEquals(1, results.at("/1/index").asInt());
      assertEquals(0, results.at("/2/index").asInt());
      assertEquals(0.8, results.at("/2/relevance_score").asDouble(), 1e-6);
      assertEquals(4, body.at("/usage/total_tokens").asInt());
    }
    JsonNode top = post(router, new FrontendMetrics(), "/v1/rerank",
        "{\"model\":\"m\",\"query\":\"sea\"," + docs + ",\"top_n\":2,\"return_documents\":false}", 200);
    assertEquals(2, top.get("results").size());
    assertEquals(1, top.at("/results/1/index").asInt());
    assertFalse(top.at("/results/0").has("document"), "return_documents false");
  }

  @Test
  void aCrossEncoderScoresEachPairByTheSigmoidOfItsLogit() throws Exception {
    ServedModel crossEncoder = new ServedModel("m", 4096, 151_936, "test", Set.of("cross_encoder"), new int[] {151645}, TOKENIZER, null);
    // The worker's pooled output for a pair: one logit, the pair's length less 3.
    var router = new GenerationRunTest.ScriptedRouter((r, l) -> answers(r, l, new float[] {r.promptTokens().length - 3}));
    GenerationRunTest.Written w = written(crossEncoder, router, new FrontendMetrics(), "/v1/rerank",
        "{\"model\":\"m\",\"query\":\"sea\",\"documents\":[\"shore\",\"the sea shore\"]}");
    assertEquals(200, w.status(), w.body());
    JsonNode body = JSON.readTree(w.body());
    assertEquals(2, router.routed.size(), "one input per pair, the query not alone");
    assertEquals(java.util.Arrays.toString(TOKENIZER.encode("seathe sea shore", true)),
        java.util.Arrays.toString(router.routed.get(1).promptTokens()), "the query's text then the document's, as vLLM joins them");
    int longer = router.routed.get(1).promptTokens().length;
    assertEquals(1, body.at("/results/0/index").asInt(), "the higher logit first");
    assertEquals(1 / (1 + Math.exp(-(longer - 3))), body.at("/results/0/relevance_score").asDouble(), 1e-9);
    JsonNode logits = JSON.readTree(written(crossEncoder, router, new FrontendMetrics(), "/score",
        "{\"model\":\"m\",\"text_1\":\"sea\",\"text_2\":\"the sea shore\",\"use_activation\":false}").body());
    assertEquals(longer - 3, logits.at("/data/0/score").asDouble(), 1e-9, "use_activation false: the logit itself");
    GenerationRunTest.Written refused = written(crossEncoder, router, new FrontendMetrics(), "/v1/embeddings",
        "{\"model\":\"m\",\"input\":\"sea\"}");
    assertEquals(400, refused.status());
    assertTrue(refused.body().contains("cross-encoder"), refused.body());
  }

  /** vLLM's /classify on a sequence classifier: each input's label logits as probabilities, named by the model card's labels. */
  @Test
  void aClassifierAnswersEachInputsClassProbabilities() throws Exception {
    ServedModel classifier = new ServedModel("m", 4096, 151_936, "test", Set.of("classify", "pooling_only"), new int[] {151645}, TOKENIZER,
        null).withLabels(java.util.List.of("negative", "positive"));
    // The worker's pooled output: logits (0, ln 3) for "sea", (ln 3, 0) for anything else.
    float ln3 = (float) Math.log(3);
    var router = new GenerationRunTest.ScriptedRouter(
        (r, l) -> answers(r, l, r.promptTokens()[0] == SEA ? new float[] {0, ln3} : new float[] {ln3, 0}));
    GenerationRunTest.Written w = written(classifier, router, new FrontendMetrics(), "/classify", "{\"model\":\"m\",\"input\":[\"sea\",\"shore\"]}");
    assertEquals(200, w.status(), w.body());
    JsonNode body = JSON.readTree(w.body());
    assertTrue(body.get("id").asText().startsWith("classify-"), body.toString());
    assertEquals("positive", body.at("/data/0/label").asText());
    assertEquals(0.75, body.at("/data/0/probs/1").asDouble(), 1e-6, "softmax of (0, ln 3)");
    assertEquals(2, body.at("/data/0/num_classes").asInt());
    assertEquals("negative", body.at("/data/1/label").asText());
    assertEquals(1, body.at("/data/1/index").asInt());
    assertTrue(router.routed.stream().allMatch(GenerationRequest::embed));
    ServedModel withTemplate = new ServedModel("m", 4096, 151_936, "test", Set.of("classify", "pooling_only"), new int[] {151645},
        TOKENIZER, dev.tandem.frontend.text.ChatTemplate.fromTokenizerConfig(ModelFiles.bundledQwen3().tokenizerConfigJson(), "qwen3"));
    String messages = "[{\"role\":\"user\",\"content\":\"sea\"}]";
    GenerationRunTest.Written chat = written(withTemplate, router, new FrontendMetrics(), "/classify",
        "{\"model\":\"m\",\"messages\":" + messages + "}");
    assertEquals(200, chat.status(), chat.body());
    int[] rendered = TOKENIZER.encode(withTemplate.chatTemplate().render(
        java.util.List.of(Map.of("role", "user", "content", "sea")), null, false, Map.of()), false);
    assertEquals(java.util.Arrays.toString(rendered), java.util.Arrays.toString(router.routed.getLast().promptTokens()),
        "vLLM's chat form: the conversation as the template renders it, without a generation prompt");
    assertEquals(Math.log(3), JSON.readTree(written(classifier, router, new FrontendMetrics(), "/classify",
        "{\"model\":\"m\",\"input\":\"sea\",\"use_activation\":false}").body()).at("/data/0/probs/1").asDouble(), 1e-6,
        "use_activation false: the logits");
    Map<String, String> refusals = Map.of(
        "/v1/embeddings", "/classify",
        "/v1/rerank", "several classes",
        "/score", "several classes");
    for (var e : refusals.entrySet()) {
      String request = switch (e.getKey()) {
        case "/v1/rerank" -> "{\"model\":\"m\",\"query\":\"sea\",\"documents\":[\"shore\"]}";
        case "/score" -> "{\"model\":\"m\",\"text_1\":\"sea\",\"text_2\":\"shore\",\"use_activation\":false}"; // not about a cosine
        default -> "{\"model\":\"m\",\"input\":\"sea\"}";
      };
      GenerationRunTest.Written refused = written(classifier, router, new FrontendMetrics(), e.getKey(), request);
      assertEquals(400, refused.status(), e.getKey());
      assertTrue(refused.body().contains(e.getValue()), refused.body());
    }
    GenerationRunTest.Written noClassifier = written(MODEL, router, new FrontendMetrics(), "/classify", "{\"model\":\"m\",\"input\":\"sea\"}");
    assertEquals(400, noClassifier.status());
    assertTrue(noClassifier.body().contains("sequence classifier"), noClassifier.body());
  }

  @Test
  void aBadRequestIsAnOpenAiErrorAndNothingRuns() throws Exception {
    var router = new GenerationRunTest.ScriptedRouter(ScoreRunTest::embeds);
    JsonNode error = post(router, new FrontendMetrics(), "/score", "{\"model\":\"m\",\"text_1\":[\"a\",\"b\"],\"text_2\":[\"c\"]}", 400);
    assertEquals("text_2", error.at("/error/param").asText());
    assertTrue(router.routed.isEmpty());
    assertEquals(405, GenerationRunTest.drain(get("/v1/rerank")).status());
  }

  private static EmbeddedChannel get(String path) {
    EmbeddedChannel ch = new EmbeddedChannel(new HttpApiHandler(MODEL, new GenerationRunTest.ScriptedRouter(ScoreRunTest::embeds),
        new FrontendMetrics(), 0, Duration.ZERO));
    ch.writeInbound(new io.netty.handler.codec.http.DefaultFullHttpRequest(io.netty.handler.codec.http.HttpVersion.HTTP_1_1,
        io.netty.handler.codec.http.HttpMethod.GET, path));
    return ch;
  }
}
