package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.embeddings.CreateEmbeddingResponse;
import com.openai.models.embeddings.EmbeddingCreateParams;
import dev.langchain4j.model.openai.OpenAiEmbeddingModel;
import dev.tandem.engine.builtin.PagedKvCache;
import dev.tandem.engine.builtin.Transformer;
import dev.tandem.engine.compute.VectorBackend;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.frontend.http.FrontendServer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * OpenAI's embeddings endpoint on `tandem serve`'s stack: two built-in workers on the generated tiny
 * model, through the official OpenAI Java SDK, LangChain4j's OpenAI module and plain HTTP; a
 * Matryoshka model's {@code dimensions}; the mocker's refusal.
 */
@org.junit.jupiter.api.Tag("e2e")
class EmbeddingsServeTest {
  @TempDir static Path dir;
  private static Path model;
  private static LocalDeployment deployment;
  private static OpenAIClient client;
  private static final ObjectMapper JSON = new ObjectMapper();

  @BeforeAll
  static void start() throws Exception {
    model = TestDeployments.tinyModel(dir);
    deployment = TestDeployments.builtin(model, 2, 1, new FrontendServer.Config("127.0.0.1", 0, 1 << 20));
    client = OpenAIOkHttpClient.builder().baseUrl(baseUrl(deployment)).apiKey("not-needed").maxRetries(0).build();
  }

  @AfterAll
  static void stop() {
    client.close();
    deployment.close();
  }

  @AfterEach
  void poolsAreFull() throws Exception {
    TestDeployments.assertPoolsFull(deployment);
  }

  private static String baseUrl(LocalDeployment d) {
    return "http://127.0.0.1:" + d.port() + "/v1";
  }

  private static JsonNode embed(LocalDeployment d, String body) throws Exception {
    return TestDeployments.json(TestDeployments.post(d, "/v1/embeddings", body));
  }

  private static float[] vector(JsonNode embedding) {
    if (embedding.isTextual()) { // base64: little-endian float32
      ByteBuffer bytes = ByteBuffer.wrap(Base64.getDecoder().decode(embedding.asText())).order(ByteOrder.LITTLE_ENDIAN);
      float[] v = new float[bytes.remaining() / Float.BYTES];
      bytes.asFloatBuffer().get(v);
      return v;
    }
    float[] v = new float[embedding.size()];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) embedding.get(i).asDouble();
    }
    return v;
  }

  private static float[] floats(List<Float> values) {
    float[] v = new float[values.size()];
    for (int i = 0; i < v.length; i++) {
      v[i] = values.get(i);
    }
    return v;
  }

  private static double norm(float[] v) {
    double s = 0;
    for (float x : v) {
      s += (double) x * x;
    }
    return Math.sqrt(s);
  }

  private static void assertClose(float[] expected, float[] actual, double tolerance, String what) {
    assertEquals(expected.length, actual.length, what + ": length");
    double diff = 0;
    for (int i = 0; i < expected.length; i++) {
      diff += Math.pow(expected[i] - actual[i], 2);
    }
    assertTrue(Math.sqrt(diff) <= tolerance * norm(expected), what + ": relative error " + Math.sqrt(diff) / norm(expected));
  }

  @Test
  void theOpenAiSdkGetsOneUnitVectorPerInputInOrder() throws Exception {
    List<String> inputs = List.of("The lighthouse keeper", "collects seashells and writes letters", "The lighthouse keeper");
    CreateEmbeddingResponse r = client.embeddings().create(EmbeddingCreateParams.builder()
        .model("tiny").inputOfArrayOfStrings(inputs).build());
    assertEquals(3, r.data().size());
    int hidden = ModelConfig.read(model).hiddenSize();
    long tokens = 0;
    for (int i = 0; i < 3; i++) {
      assertEquals(i, r.data().get(i).index());
      float[] v = floats(r.data().get(i).embedding());
      assertEquals(hidden, v.length);
      assertEquals(1.0, norm(v), 1e-5, "unit length");
      tokens += JSON.readTree(TestDeployments.post(deployment, "/tokenize", "{\"model\":\"tiny\",\"prompt\":"
          + JSON.writeValueAsString(inputs.get(i)) + "}").body()).get("count").asInt();
    }
    float[] first = floats(r.data().get(0).embedding());
    assertClose(first, floats(r.data().get(2).embedding()), 1e-3, "the same text, the same vector");
    assertNotEquals(first[0], floats(r.data().get(1).embedding())[0], "another text, another vector");
    assertEquals(tokens, r.usage().promptTokens(), "every input token counted");
    assertEquals(tokens, r.usage().totalTokens());
    float[] alone = floats(client.embeddings().create(EmbeddingCreateParams.builder().model("tiny").input(inputs.get(1)).build())
        .data().getFirst().embedding());
    assertClose(alone, floats(r.data().get(1).embedding()), 1e-3, "an input's vector does not depend on the others beside it");
  }

  /** The vector is the model's final norm output for the input's last token, as a pass of the model over the tokens gives it. */
  @Test
  void theVectorIsTheFinalHiddenStateOfTheLastToken() throws Exception {
    JsonNode tokenized = JSON.readTree(TestDeployments.post(deployment, "/tokenize",
        "{\"model\":\"tiny\",\"prompt\":\"Write a long story about a lighthouse keeper.\"}").body()).get("tokens");
    int[] ids = new int[tokenized.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = tokenized.get(i).asInt();
    }
    float[] reference;
    ModelConfig config = ModelConfig.read(model);
    try (ModelWeights weights = ModelWeights.load(model, config, null);
        VectorBackend backend = new VectorBackend(1);
        PagedKvCache cache = new PagedKvCache(config, 4, 16, DType.F32);
        Transformer pass = new Transformer(weights, backend, 16, config.maxPositionEmbeddings())) {
      pass.forward(List.of(new Transformer.Slice(ids, 0, ids.length, 0, new int[] {0, 1, 2, 3}, true)), cache);
      reference = pass.finalHidden(0);
    }
    float[] raw = vector(embed(deployment, "{\"model\":\"tiny\",\"input\":" + tokenized + ",\"normalize\":false}").at("/data/0/embedding"));
    assertClose(reference, raw, 1e-2, "the worker's hidden state (its KV cache is bf16)");
    JsonNode fromText = embed(deployment,
        "{\"model\":\"tiny\",\"input\":\"Write a long story about a lighthouse keeper.\",\"encoding_format\":\"base64\"}");
    float[] unit = vector(fromText.at("/data/0/embedding"));
    float[] scaled = raw.clone();
    double n = norm(raw);
    for (int i = 0; i < scaled.length; i++) {
      scaled[i] = (float) (scaled[i] / n);
    }
    assertClose(scaled, unit, 1e-3, "the text's tokens, normalized, sent as base64");
    assertEquals(ids.length, fromText.at("/usage/prompt_tokens").asInt());
    assertTrue(fromText.get("id").asText().startsWith("embd-"));
    assertEquals("list", fromText.get("object").asText());
    assertEquals("embedding", fromText.at("/data/0/object").asText());
  }

  /** vLLM's chat embeddings: the conversation as the chat template writes it, without a generation prompt. */
  @Test
  void aConversationIsEmbeddedAsItsTemplateRendersIt() throws Exception {
    String messages = "\"messages\":[{\"role\":\"system\",\"content\":\"Represent this for retrieval.\"},"
        + "{\"role\":\"user\",\"content\":\"Where does the keeper live?\"}]";
    JsonNode tokens = JSON.readTree(TestDeployments.post(deployment, "/tokenize",
        "{\"model\":\"tiny\"," + messages + ",\"add_generation_prompt\":false}").body()).get("tokens");
    JsonNode fromChat = embed(deployment, "{\"model\":\"tiny\"," + messages + "}");
    assertClose(vector(embed(deployment, "{\"model\":\"tiny\",\"input\":" + tokens + "}").at("/data/0/embedding")),
        vector(fromChat.at("/data/0/embedding")), 1e-3, "the rendered conversation's tokens");
    assertEquals(tokens.size(), fromChat.at("/usage/prompt_tokens").asInt());
  }

  @Test
  void langChain4jEmbedsThroughItsOpenAiModule() {
    OpenAiEmbeddingModel embeddings = OpenAiEmbeddingModel.builder()
        .baseUrl(baseUrl(deployment)).apiKey("not-needed").modelName("tiny").maxRetries(0).build();
    float[] v = embeddings.embed("A lighthouse on the coast").content().vector();
    assertEquals(ModelConfig.read(model).hiddenSize(), v.length);
    float[] same = floats(client.embeddings().create(EmbeddingCreateParams.builder().model("tiny").input("A lighthouse on the coast").build())
        .data().getFirst().embedding());
    assertClose(same, v, 1e-3, "the same vector through either client");
  }

  private static double dot(float[] a, float[] b) {
    double s = 0;
    for (int i = 0; i < a.length; i++) {
      s += (double) a[i] * b[i];
    }
    return s;
  }

  /** vLLM's score and the rerank API over an embedding model: each score is the cosine of the two texts' embeddings. */
  @Test
  void scoresAndRankingsAreTheCosinesOfTheTextsEmbeddings() throws Exception {
    List<String> documents = List.of("Seashells on the shore", "The lighthouse keeper climbs the tower", "A recipe for bread");
    String query = "Who climbs the lighthouse tower?";
    JsonNode embedded = embed(deployment, "{\"model\":\"tiny\",\"input\":" + JSON.writeValueAsString(
        java.util.stream.Stream.concat(java.util.stream.Stream.of(query), documents.stream()).toList()) + "}");
    float[] q = vector(embedded.at("/data/0/embedding"));
    double[] cosines = new double[documents.size()];
    for (int j = 0; j < cosines.length; j++) {
      cosines[j] = dot(q, vector(embedded.at("/data/" + (j + 1) + "/embedding")));
    }
    JsonNode scored = TestDeployments.json(TestDeployments.post(deployment, "/score", "{\"model\":\"tiny\",\"text_1\":"
        + JSON.writeValueAsString(query) + ",\"text_2\":" + JSON.writeValueAsString(documents) + "}"));
    for (int j = 0; j < cosines.length; j++) {
      assertEquals(cosines[j], scored.at("/data/" + j + "/score").asDouble(), 1e-3, "text_2[" + j + "]");
    }
    assertEquals(embedded.at("/usage/prompt_tokens").asInt(), scored.at("/usage/prompt_tokens").asInt(), "the same texts embedded");
    JsonNode ranked = TestDeployments.json(TestDeployments.post(deployment, "/v1/rerank", "{\"model\":\"tiny\",\"query\":"
        + JSON.writeValueAsString(query) + ",\"documents\":" + JSON.writeValueAsString(documents) + ",\"top_n\":2}"));
    JsonNode results = ranked.get("results");
    assertEquals(2, results.size());
    Integer[] byScore = {0, 1, 2};
    java.util.Arrays.sort(byScore, (a, b) -> Double.compare(cosines[b], cosines[a]));
    for (int r = 0; r < 2; r++) {
      int index = results.get(r).get("index").asInt();
      assertEquals(cosines[index], results.get(r).get("relevance_score").asDouble(), 1e-3);
      assertEquals(documents.get(index), results.get(r).at("/document/text").asText());
      if (Math.abs(cosines[byScore[r]] - cosines[index]) > 1e-3) { // a near tie may come either way
        assertEquals(byScore[r], index, "rank " + r);
      }
    }
  }

  /**
   * The tiny model served as vLLM serves Qwen3-Reranker ({@code --hf-overrides}): a pair's score is
   * the sigmoid of the "yes" logit less the "no" logit at the pair's last token, as a pass of the
   * model over the pair's tokens (the query's text then the document's, as vLLM joins them) gives them.
   */
  @Test
  void aCrossEncoderScoresEachPairByItsYesAndNoLogits() throws Exception {
    String overrides = "{\"architectures\": [\"Qwen3ForSequenceClassification\"], \"classifier_from_token\": [\"no\", \"yes\"], "
        + "\"is_original_qwen3_reranker\": true}";
    List<String> documents = List.of("The lighthouse keeper climbs the tower", "A recipe for bread");
    String query = "<Query>: Who climbs the lighthouse tower?\n";
    var classifier = dev.tandem.engine.model.ClassifierConfig.parse(overrides, model);
    ModelConfig config = ModelConfig.read(model);
    try (LocalDeployment d = TestDeployments.builtin(model, 1, 1, new FrontendServer.Config("127.0.0.1", 0, 1 << 20),
            c -> c.withHfOverrides(overrides));
        ModelWeights weights = ModelWeights.load(model, config, null);
        VectorBackend backend = new VectorBackend(1);
        PagedKvCache cache = new PagedKvCache(config, 8, 16, DType.F32);
        Transformer pass = new Transformer(weights, backend, 16, config.maxPositionEmbeddings())) {
      JsonNode ranked = TestDeployments.json(TestDeployments.post(d, "/v1/rerank", "{\"model\":\"tiny\",\"query\":"
          + JSON.writeValueAsString(query) + ",\"documents\":" + JSON.writeValueAsString(documents) + "}"));
      JsonNode scored = TestDeployments.json(TestDeployments.post(d, "/score", "{\"model\":\"tiny\",\"text_1\":"
          + JSON.writeValueAsString(query) + ",\"text_2\":" + JSON.writeValueAsString(documents) + ",\"use_activation\":false}"));
      long tokens = 0;
      for (int j = 0; j < documents.size(); j++) {
        int[] ids = tokenIds(d, query + documents.get(j));
        tokens += ids.length;
        float[] logits = pass.forward(List.of(new Transformer.Slice(ids, 0, ids.length, 0, new int[] {0, 1, 2, 3, 4, 5, 6, 7}, true)),
            cache)[0];
        double logit = classifier.logits(logits, null)[0];
        assertEquals(logit, scored.at("/data/" + j + "/score").asDouble(), 0.05 + 0.02 * Math.abs(logit),
            "text_2[" + j + "]: the logit (the worker's KV cache is bf16)");
        for (JsonNode r : ranked.get("results")) {
          if (r.get("index").asInt() == j) {
            assertEquals(1 / (1 + Math.exp(-logit)), r.get("relevance_score").asDouble(), 0.02, "documents[" + j + "]: its sigmoid");
          }
        }
      }
      assertEquals(tokens, scored.at("/usage/prompt_tokens").asInt(), "each pair's tokens");
      var embeddings = TestDeployments.post(d, "/v1/embeddings", "{\"model\":\"tiny\",\"input\":\"x\"}");
      assertEquals(400, embeddings.statusCode(), embeddings.body());
      assertTrue(embeddings.body().contains("cross-encoder"), embeddings.body());
      TestDeployments.assertPoolsFull(d);
    }
  }

  private static int[] tokenIds(LocalDeployment d, String text) throws Exception {
    JsonNode tokens = JSON.readTree(TestDeployments.post(d, "/tokenize", "{\"model\":\"tiny\",\"prompt\":" + JSON.writeValueAsString(text)
        + "}").body()).get("tokens");
    int[] ids = new int[tokens.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = tokens.get(i).asInt();
    }
    return ids;
  }

  @Test
  void badRequestsGetOpenAiErrorsAndServingGoesOn() throws Exception {
    var noTruncation = TestDeployments.post(deployment, "/v1/embeddings", "{\"model\":\"tiny\",\"input\":\"x\",\"dimensions\":8}");
    assertEquals(400, noTruncation.statusCode());
    assertEquals("dimensions", JSON.readTree(noTruncation.body()).at("/error/param").asText());
    int window = JSON.readTree(TestDeployments.post(deployment, "/tokenize", "{\"model\":\"tiny\",\"prompt\":\"x\"}").body())
        .get("max_model_len").asInt();
    String tooLong = "{\"model\":\"tiny\",\"input\":[" + "7,".repeat(window - 1) + "7]}"; // the window, less the drawn token, is the most

    var refused = TestDeployments.post(deployment, "/v1/embeddings", tooLong);
    assertEquals(400, refused.statusCode(), refused.body());
    assertEquals("context_length_exceeded", JSON.readTree(refused.body()).at("/error/code").asText(null), refused.body());
    assertEquals(1, embed(deployment, "{\"model\":\"tiny\",\"input\":\"still serving\"}").get("data").size());
  }

  /** A model whose config.json says it was trained for truncation cuts its vectors to {@code dimensions}, then normalizes them. */
  @Test
  void aMatryoshkaModelCutsItsVectorsToTheDimensionsAsked() throws Exception {
    Path matryoshka = dir.resolve("tiny-matryoshka");
    dev.tandem.engine.modeltools.ModelGenerator.write(
        dev.tandem.engine.modeltools.ModelGenerator.shape("tiny"), DType.BF16, 0, matryoshka, 0);
    ObjectNode config = (ObjectNode) JSON.readTree(matryoshka.resolve("config.json").toFile());
    Files.writeString(matryoshka.resolve("config.json"), JSON.writeValueAsString(config.put("is_matryoshka", true)));
    try (LocalDeployment d = TestDeployments.builtin(matryoshka, 1, 1, new FrontendServer.Config("127.0.0.1", 0, 1 << 20))) {
      String input = "\"input\":\"A lighthouse on the coast\"";
      float[] raw = vector(embed(d, "{\"model\":\"tiny-matryoshka\"," + input + ",\"normalize\":false}").at("/data/0/embedding"));
      float[] cut = vector(embed(d, "{\"model\":\"tiny-matryoshka\"," + input + ",\"dimensions\":16}").at("/data/0/embedding"));
      assertEquals(16, cut.length);
      float[] expected = java.util.Arrays.copyOf(raw, 16);
      double n = norm(expected);
      for (int i = 0; i < 16; i++) {
        expected[i] = (float) (expected[i] / n);
      }
      assertArrayEquals(expected, cut, 1e-4f, "the first 16 values at unit length");
      var tooMany = TestDeployments.post(d, "/v1/embeddings", "{\"model\":\"tiny-matryoshka\"," + input + ",\"dimensions\":100000}");
      assertEquals(400, tooMany.statusCode(), tooMany.body());
      assertEquals("dimensions", JSON.readTree(tooMany.body()).at("/error/param").asText());
      TestDeployments.assertPoolsFull(d);
    }
  }

  /**
   * A checkpoint without a language-model head (no lm_head.weight, embeddings not tied in
   * config.json, as gte-Qwen2 and e5-mistral ship) serves the same embeddings as its tied twin and
   * refuses chat with a 400 that names what it serves.
   */
  @Test
  void aModelWithoutAnLmHeadServesEmbeddingsAndRefusesChat() throws Exception {
    Path headless = dir.resolve("tiny-headless");
    Files.createDirectories(headless);
    try (var files = Files.list(model)) {
      for (Path f : files.toList()) {
        Files.copy(f, headless.resolve(f.getFileName()));
      }
    }
    ObjectNode config = (ObjectNode) JSON.readTree(headless.resolve("config.json").toFile());
    Files.writeString(headless.resolve("config.json"), JSON.writeValueAsString(config.put("tie_word_embeddings", false)));
    String input = "\"input\":\"A lighthouse on the coast\"";
    float[] tied = vector(embed(deployment, "{\"model\":\"tiny\"," + input + "}").at("/data/0/embedding"));
    try (LocalDeployment d = TestDeployments.builtin(headless, 1, 1, new FrontendServer.Config("127.0.0.1", 0, 1 << 20))) {
      assertClose(tied, vector(embed(d, "{\"model\":\"tiny-headless\"," + input + "}").at("/data/0/embedding")), 1e-4,
          "the same hidden state: the head plays no part");
      var chat = TestDeployments.post(d, "/v1/chat/completions", "{\"model\":\"tiny-headless\",\"messages\":[{\"role\":\"user\","
          + "\"content\":\"hi\"}]}");
      assertEquals(400, chat.statusCode(), chat.body());
      assertTrue(chat.body().contains("no language-model head"), chat.body());
      TestDeployments.assertPoolsFull(d);
    }
  }

  /**
   * A BERT encoder (EncoderGenerator's, seed 7) served as `tandem serve --model` resolves it: each
   * embedding is its [CLS] state for the text as its WordPiece tokenizer splits it, special tokens
   * added, scaled to unit length; /rerank ranks by those vectors; chat is a 400 naming what it
   * serves; a decoder's flag is refused naming it.
   */
  @Test
  void anEncoderServesItsPooledStatesAndRefusesGeneration() throws Exception {
    Path bert = dir.resolve("bert");
    dev.tandem.engine.modeltools.EncoderGenerator.write(bert, 7, 32, 2, 4, 64, null);
    EngineOptions quantized = new EngineOptions();
    new picocli.CommandLine(quantized).parseArgs("--model", bert.toString(), "--quantization", "q8_0");
    String refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> quantized.resolve(false)).getMessage();
    assertTrue(refused.contains("--quantization") && refused.contains("encoder"), refused);
    EngineOptions flags = new EngineOptions();
    new picocli.CommandLine(flags).parseArgs("--model", bert.toString(), "--compute", "cpu", "--served-model-name", "bert");
    var engines = flags.resolve(false);
    float[] expected;
    try (var engine = dev.tandem.engine.encoder.EncoderEngine.open(bert, "bert", "cpu", 1, 1, 64)) {
      engine.add(new dev.tandem.engine.EngineRequest("probe", new int[] {2, 11, 25, 3}, // [CLS] a seashell [SEP]
          dev.tandem.common.SamplingParams.greedy(), dev.tandem.common.StopConditions.maxTokens(1), null, 1, null, 0, 0, null, true));
      expected = engine.step().get(0).embedding();
    }
    double norm = 0;
    for (float v : expected) {
      norm += v * v;
    }
    for (int i = 0; i < expected.length; i++) {
      expected[i] /= (float) Math.sqrt(norm);
    }
    try (LocalDeployment d = LocalDeployment.start(new LocalDeployment.Spec(1, engines.factory(), engines.modelFiles(), engines.blockSize(),
        dev.tandem.router.grpc.Router.Config.of("kv"), new FrontendServer.Config("127.0.0.1", 0, 1 << 20)))) {
      JsonNode r = embed(d, "{\"model\":\"bert\",\"input\":[\"A Seashell\",\"who keeps the lighthouse?\"]}");
      assertEquals(4 + 7, r.at("/usage/prompt_tokens").asInt(), r.toString());
      assertClose(expected, vector(r.at("/data/0/embedding")), 1e-5, "the [CLS] state, lower-cased and split as BERT's tokenizer does");
      JsonNode ranked = TestDeployments.json(TestDeployments.post(d, "/v1/rerank",
          "{\"model\":\"bert\",\"query\":\"a seashell\",\"documents\":[\"the storm\",\"A SEASHELL\"]}"));
      assertEquals(1, ranked.at("/results/0/index").asInt(), "the same text ranks first: " + ranked);
      assertEquals(1.0, ranked.at("/results/0/relevance_score").asDouble(), 1e-5, ranked.toString());
      var chat = TestDeployments.post(d, "/v1/chat/completions", "{\"model\":\"bert\",\"messages\":[{\"role\":\"user\","
          + "\"content\":\"hi\"}]}");
      assertEquals(400, chat.statusCode(), chat.body());
      assertTrue(chat.body().contains("encoder"), chat.body());
      // An encoder draws no token after its input: all 64 positions are the input's (62 words and [CLS], [SEP]).
      assertEquals(64, embed(d, "{\"model\":\"bert\",\"input\":\"" + "sea ".repeat(62) + "\"}").at("/usage/prompt_tokens").asInt());
      var tooLong = TestDeployments.post(d, "/v1/embeddings", "{\"model\":\"bert\",\"input\":\"" + "sea ".repeat(63) + "\"}");
      assertEquals(400, tooLong.statusCode(), tooLong.body());
      assertTrue(tooLong.body().contains("of which 64 can be embedded"), tooLong.body());
      TestDeployments.assertPoolsFull(d);
    }
  }

  @Test
  void theMockerRefusesEmbeddingsNamingItsEngine() throws Exception {
    try (LocalDeployment mocker = TestDeployments.start(1, TimingModel.noDelay(), 1 << 20)) {
      var r = TestDeployments.post(mocker, "/v1/embeddings", "{\"model\":\"" + TestDeployments.MODEL + "\",\"input\":\"hello\"}");
      assertEquals(400, r.statusCode(), r.body());
      assertTrue(JSON.readTree(r.body()).at("/error/message").asText().contains("mocker"), r.body());
      var rerank = TestDeployments.post(mocker, "/v1/rerank", "{\"model\":\"" + TestDeployments.MODEL + "\",\"query\":\"q\","
          + "\"documents\":[\"d\"]}");
      assertEquals(400, rerank.statusCode(), rerank.body());
      assertTrue(JSON.readTree(rerank.body()).at("/error/message").asText().contains("mocker"), rerank.body());
    }
  }
}
