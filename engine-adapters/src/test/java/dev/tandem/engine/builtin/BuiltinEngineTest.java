package dev.tandem.engine.builtin;

import dev.tandem.common.FinishReason;
import static dev.tandem.engine.EngineRuns.runToCompletion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.KvEvent;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.model.DType;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BuiltinEngineTest {
  @TempDir static Path dir;
  static Path model;

  @BeforeAll
  static void createModel() {
    model = TestModels.tinyQwen3(dir.resolve("tiny"), DType.BF16);
  }

  private static BuiltinEngine engine(int kvBlocks, int maxBatchedTokens) {
    long blockBytes = dev.tandem.engine.model.ModelConfig.read(model).kvBytesPerToken() * 16; // at the model's dtype, the default
    BuiltinConfig c =
        BuiltinConfig.of(model)
            .withCompute("cpu", 2)
            .withKvCacheBytes(kvBlocks * blockBytes)
            .withBatching(16, maxBatchedTokens, true);
    return BuiltinEngine.open(c);
  }

  /**
   * Mistral v0.1 attends over a 4,096-token window: on the CPU the engine serves such a model to
   * its max_position_embeddings with each token attending to the last window positions. Within the
   * window that is full attention (the same tokens as the model without a window); past it, not.
   */
  @Test
  void aSlidingWindowModelIsServedPastItsWindow() throws Exception {
    com.fasterxml.jackson.databind.node.ObjectNode c = TestModels.tinyQwen3Config();
    c.putArray("architectures").add("MistralForCausalLM");
    c.put("model_type", "mistral");
    Path full = dir.resolve("mistral-no-window");
    dev.tandem.engine.modeltools.ModelGenerator.write(c.deepCopy().putNull("sliding_window"), DType.BF16, 5, full, 0);
    Path windowed = dir.resolve("mistral-window-40");
    dev.tandem.engine.modeltools.ModelGenerator.write(c.put("sliding_window", 40), DType.BF16, 5, windowed, 0);
    try (BuiltinEngine w = BuiltinEngine.open(BuiltinConfig.of(windowed).withCompute("cpu", 2));
        BuiltinEngine f = BuiltinEngine.open(BuiltinConfig.of(full).withCompute("cpu", 2))) {
      assertEquals(c.get("max_position_embeddings").asInt(), w.info().maxContextLength());
      // Its prefill cost counts attended tokens as the layers attend, and says so to the router.
      assertEquals(new dev.tandem.common.PrefillCost.Attention(40, 1), w.prefillCost().attention());
      assertEquals(dev.tandem.common.PrefillCost.Attention.FULL, f.prefillCost().attention());
      int[] inside = prompt(30, 1); // 30 + 10 tokens: every position within the window
      assertEquals(runToCompletionOf(f, greedy("f", inside, 10)), runToCompletionOf(w, greedy("w", inside, 10)));
      int[] past = prompt(120, 2);
      List<Integer> slid = runToCompletionOf(w, greedy("w2", past, 10));
      assertEquals(10, slid.size());
      assertNotEquals(runToCompletionOf(f, greedy("f2", past, 10)), slid, "past the window the model attends to less");
    }
  }

  private static List<Integer> runToCompletionOf(BuiltinEngine e, EngineRequest r) {
    e.add(r);
    return runToCompletion(e, new HashMap<>()).get(r.requestId());
  }

  private static int[] prompt(int length, int salt) {
    return IntStream.range(0, length).map(i -> (i * 31 + salt * 17 + 3) % 250).toArray();
  }

  private static EngineRequest greedy(String id, int[] prompt, int maxTokens) {
    return new EngineRequest(id, prompt, SamplingParams.greedy(), new StopConditions(maxTokens, new int[0], true));
  }

  private static EngineRequest sampled(String id, int[] prompt, int maxTokens, SamplingParams p) {
    return new EngineRequest(id, prompt, p, new StopConditions(maxTokens, new int[0], true));
  }

  private static SamplingParams params(float temperature, float topP, int topK, float minP, Long seed,
      float presence, float frequency, float repetition) {
    return new SamplingParams(temperature, topP, topK, minP,
        seed == null ? OptionalLong.empty() : OptionalLong.of(seed), presence, frequency, repetition, -1);
  }

  private static List<Integer> alone(EngineRequest request) {
    try (BuiltinEngine e = engine(64, 512)) {
      e.add(request);
      return runToCompletion(e, new HashMap<>()).get(request.requestId());
    }
  }

  private static RequestOutput firstOutput(BuiltinEngine e, EngineRequest r) {
    e.add(r);
    RequestOutput first = null;
    while (e.hasWork()) {
      for (RequestOutput o : e.step()) {
        if (first == null && o.requestId().equals(r.requestId())) {
          first = o;
        }
      }
    }
    return first;
  }

  /**
   * A request asking for its embedding gets, on its first output, the final norm's output for its
   * prompt's last token: what a pass of the model over the prompt alone leaves before the LM head
   * (checked against PyTorch in ReferenceLogitsTest) — computed whole, in chunks, or after a prefix
   * cache hit; others get none.
   */
  @Test
  void anEmbeddingIsTheFinalNormOfThePromptsLastToken() {
    int[] p = prompt(40, 13);
    float[] reference;
    dev.tandem.engine.model.ModelConfig config = dev.tandem.engine.model.ModelConfig.read(model);
    try (dev.tandem.engine.model.ModelWeights weights = dev.tandem.engine.model.ModelWeights.load(model, config, null);
        dev.tandem.engine.compute.ComputeBackend backend = new dev.tandem.engine.compute.VectorBackend(2);
        PagedKvCache cache = new PagedKvCache(config, 8, 16, DType.F32);
        Transformer pass = new Transformer(weights, backend, 16, config.maxPositionEmbeddings())) {
      pass.forward(List.of(new Transformer.Slice(p, 0, p.length, 0, new int[] {0, 1, 2}, true)), cache);
      reference = pass.finalHidden(0);
    }
    assertEquals(config.hiddenSize(), reference.length);
    EngineRequest embed = greedy("e", p, 1).withEmbedding();
    try (BuiltinEngine e = engine(64, 512)) {
      assertTrue(e.info().features().contains(dev.tandem.engine.EngineInfo.Feature.EMBEDDINGS));
      RequestOutput first = firstOutput(e, embed);
      assertEquals(0, first.cachedTokens());
      ReferenceLogitsTest.assertClose(reference, first.embedding(), 1e-2, "whole prompt"); // the engine's KV is bf16
      RequestOutput again = firstOutput(e, greedy("e2", p, 1).withEmbedding());
      assertTrue(again.cachedTokens() >= 32, "the repeat reuses the cached prefix: " + again.cachedTokens());
      ReferenceLogitsTest.assertClose(first.embedding(), again.embedding(), 1e-3, "after a prefix cache hit");
      assertNull(firstOutput(e, greedy("plain", prompt(20, 3), 1)).embedding(), "not asked for");
    }
    try (BuiltinEngine chunked = engine(64, 16)) {
      ReferenceLogitsTest.assertClose(reference, firstOutput(chunked, embed).embedding(), 1e-2, "in chunks of 16 tokens");
    }
  }

  /**
   * A checkpoint without a language-model head (no lm_head.weight, embeddings not tied: gte-Qwen2,
   * e5-mistral) loads for embeddings only: the same hidden state as its tied twin, the
   * {@code pooling_only} feature, and generation refused.
   */
  @Test
  void aModelWithoutAnLmHeadServesEmbeddingsOnly() throws Exception {
    Path headless = dir.resolve("headless");
    java.nio.file.Files.createDirectories(headless);
    try (var files = java.nio.file.Files.list(model)) {
      for (Path f : files.toList()) {
        java.nio.file.Files.copy(f, headless.resolve(f.getFileName()));
      }
    }
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    var config = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(headless.resolve("config.json").toFile());
    json.writeValue(headless.resolve("config.json").toFile(), config.put("tie_word_embeddings", false));
    int[] p = prompt(30, 5);
    float[] tied;
    try (BuiltinEngine e = engine(64, 512)) {
      assertFalse(e.info().features().contains(dev.tandem.engine.EngineInfo.Feature.POOLING_ONLY));
      tied = firstOutput(e, greedy("t", p, 1).withEmbedding()).embedding();
    }
    long blockBytes = dev.tandem.engine.model.ModelConfig.read(model).kvBytesPerToken() * 16;
    try (BuiltinEngine e = BuiltinEngine.open(BuiltinConfig.of(headless).withCompute("cpu", 2).withKvCacheBytes(64 * blockBytes))) {
      assertTrue(e.info().features().containsAll(List.of(dev.tandem.engine.EngineInfo.Feature.POOLING_ONLY,
          dev.tandem.engine.EngineInfo.Feature.EMBEDDINGS)), e.info().features().toString());
      EngineWarmUp.run(e, () -> {}, 32, 1); // a worker that may be split warms its engine up first: it must take that too
      ReferenceLogitsTest.assertClose(tied, firstOutput(e, greedy("h", p, 1).withEmbedding()).embedding(), 1e-5, "the head plays no part");
      IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> e.add(greedy("g", p, 4)));
      assertTrue(refused.getMessage().contains("no language-model head"), refused.getMessage());
    }
  }

  /**
   * A sequence classifier's checkpoint (Qwen3ForSequenceClassification with its score.weight) of
   * one label (a converted reranker, a reward model) serves as a cross-encoder, of two as a
   * classifier: an embed request's pooled output is the head times the final norm's output at its
   * last token; nothing else is served.
   */
  @Test
  void aOneLabelSequenceClassifierAnswersWithItsScoreHeadsLogit() throws Exception {
    int hidden = dev.tandem.engine.model.ModelConfig.read(model).hiddenSize();
    float[] row = new float[hidden];
    for (int i = 0; i < hidden; i++) {
      row[i] = (float) Math.sin(i + 1) / 4;
    }
    Path classifier = TestModels.sequenceClassifier(model, dir.resolve("seq-cls"), new float[][] {row});
    int[] p = prompt(30, 9);
    float[] hiddenState;
    try (BuiltinEngine e = engine(64, 512)) {
      hiddenState = firstOutput(e, greedy("t", p, 1).withEmbedding()).embedding();
    }
    double expected = 0;
    for (int i = 0; i < hidden; i++) {
      expected += (double) row[i] * hiddenState[i];
    }
    long blockBytes = dev.tandem.engine.model.ModelConfig.read(model).kvBytesPerToken() * 16;
    BuiltinConfig config = BuiltinConfig.of(classifier).withCompute("cpu", 2).withKvCacheBytes(64 * blockBytes);
    try (BuiltinEngine e = BuiltinEngine.open(config)) {
      var features = e.info().features();
      assertTrue(features.contains(dev.tandem.engine.EngineInfo.Feature.CROSS_ENCODER), features.toString());
      assertTrue(features.contains(dev.tandem.engine.EngineInfo.Feature.POOLING_ONLY), features.toString());
      assertFalse(features.contains(dev.tandem.engine.EngineInfo.Feature.EMBEDDINGS), features.toString());
      float[] logit = firstOutput(e, greedy("c", p, 1).withEmbedding()).embedding();
      assertEquals(1, logit.length);
      assertEquals(expected, logit[0], 1e-4 + 1e-4 * Math.abs(expected), "score.weight · the last token's final norm output");
      assertTrue(Math.abs(expected) > 0.05, "a logit that tells: " + expected);
      IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> e.add(greedy("g", p, 4)));
      assertTrue(refused.getMessage().contains("sequence classifier"), refused.getMessage());
    }
    float[] negated = row.clone();
    for (int i = 0; i < hidden; i++) {
      negated[i] = -row[i];
    }
    Path twoLabels = TestModels.sequenceClassifier(model, dir.resolve("seq-cls-2"), new float[][] {row, negated});
    try (BuiltinEngine e = BuiltinEngine.open(BuiltinConfig.of(twoLabels).withCompute("cpu", 2).withKvCacheBytes(64 * blockBytes))) {
      var features = e.info().features();
      assertTrue(features.contains(dev.tandem.engine.EngineInfo.Feature.CLASSIFY), features.toString());
      assertFalse(features.contains(dev.tandem.engine.EngineInfo.Feature.CROSS_ENCODER), "two classes are not a relevance logit");
      float[] logits = firstOutput(e, greedy("c2", p, 1).withEmbedding()).embedding();
      assertEquals(2, logits.length, "one logit a label");
      assertEquals(expected, logits[0], 1e-4 + 1e-4 * Math.abs(expected));
      assertEquals(-expected, logits[1], 1e-4 + 1e-4 * Math.abs(expected));
    }
  }

  @Test
  void promptLogprobsAreEachTokensLogprobGivenThoseBeforeIt() {
    int[] p = prompt(40, 11);
    SamplingParams wants = SamplingParams.greedy().withPromptLogprobs(2);
    dev.tandem.common.TokenLogprob[] whole;
    dev.tandem.common.TokenLogprob[] chunked;
    try (BuiltinEngine e = engine(64, 512)) {
      whole = firstOutput(e, sampled("whole", p, 1, wants)).promptLogprobs();
      assertEquals(p.length - 1, whole.length);
      // The same prompt again: cached now, but the logprobs need every position computed.
      dev.tandem.common.TokenLogprob[] again = firstOutput(e, sampled("again", p, 1, wants)).promptLogprobs();
      for (int i = 0; i < whole.length; i++) {
        assertEquals(whole[i].logprob(), again[i].logprob(), 1e-4, "position " + i);
      }
      // Position i equals the logprob of prompt[i + 1] drawn after prompt[0..i] (forced by a bias;
      // reported logprobs are of the raw distribution).
      for (int i : new int[] {0, 7, 20, 38}) {
        SamplingParams forced = SamplingParams.greedy().withLogprobs(0).withLogitBias(java.util.Map.of(p[i + 1], 100f));
        RequestOutput o = firstOutput(e, sampled("prefix" + i, Arrays.copyOf(p, i + 1), 1, forced));
        assertEquals(p[i + 1], o.newTokens()[0]);
        assertEquals(o.logprobs()[0].logprob(), whole[i].logprob(), 2e-3, "position " + i);
        assertTrue(whole[i].logprob() <= 0 && whole[i].topTokenIds().length == 2);
      }
    }
    try (BuiltinEngine e = engine(64, 16)) { // chunked prefill: 16 tokens a step
      chunked = firstOutput(e, sampled("chunked", p, 1, wants)).promptLogprobs();
    }
    for (int i = 0; i < whole.length; i++) {
      assertEquals(whole[i].logprob(), chunked[i].logprob(), 2e-3, "position " + i);
    }
  }

  @Test
  void logitBiasForcesAndBansTokens() {
    int[] p = prompt(20, 9);
    List<Integer> free = alone(greedy("free", p, 6));
    SamplingParams force = SamplingParams.greedy().withLogitBias(java.util.Map.of(77, 100f));
    assertEquals(List.of(77, 77, 77, 77, 77, 77), alone(sampled("force", p, 6, force)));
    SamplingParams ban = SamplingParams.greedy().withLogitBias(java.util.Map.of(free.get(0), -100f));
    List<Integer> banned = alone(sampled("ban", p, 1, ban));
    assertTrue(!banned.get(0).equals(free.get(0)), "the greedy first token is banned: " + free + " vs " + banned);
  }

  /**
   * vLLM's {@code allowed_token_ids}: greedy picks the likeliest allowed token (not the free
   * argmax), sampling draws nothing else, and a request without the list is untouched.
   */
  @Test
  void allowedTokenIdsAreTheOnlyTokensDrawn() {
    int[] p = prompt(20, 9);
    List<Integer> free = alone(greedy("free", p, 6));
    List<Integer> allowed = List.of(5, 77, 300, free.get(0) + 1);
    List<Integer> greedy = alone(sampled("allowed-greedy", p, 6, SamplingParams.greedy().withAllowedTokenIds(allowed)));
    assertTrue(allowed.containsAll(greedy), greedy.toString());
    assertFalse(greedy.get(0).equals(free.get(0)), "the free greedy token is not allowed");
    SamplingParams hot = new SamplingParams(1.5f, 1f, -1, 0f, java.util.OptionalLong.of(3), 0f, 0f, 1f, -1).withAllowedTokenIds(allowed);
    List<Integer> drawn = alone(sampled("allowed-sampled", p, 24, hot));
    assertTrue(allowed.containsAll(drawn), drawn.toString());
    assertTrue(new java.util.HashSet<>(drawn).size() > 1, "sampled, more than one allowed token comes out: " + drawn);
    assertEquals(free, alone(greedy("free-again", p, 6)));
  }

  /**
   * vLLM's {@code bad_words}: a one-token word is never drawn; a two-token word's second token is
   * banned only right after its first — the output may hold the first alone, never the pair.
   */
  @Test
  void badWordsAreNeverGeneratedWhole() {
    int[] p = prompt(20, 9);
    List<Integer> free = alone(greedy("free", p, 6));
    SamplingParams one = SamplingParams.greedy().withBadWords(List.of(List.of(free.get(0))));
    List<Integer> without = alone(sampled("one-token", p, 6, one));
    assertFalse(without.contains(free.get(0)), without.toString());
    SamplingParams pair = SamplingParams.greedy().withBadWords(List.of(List.of(free.get(0), free.get(1))));
    List<Integer> split = alone(sampled("two-tokens", p, 6, pair));
    assertEquals(free.get(0), split.get(0), "the word's first token alone is allowed");
    assertFalse(split.get(1).equals(free.get(1)), "but not the word: " + free + " vs " + split);
    for (int i = 1; i < split.size(); i++) {
      assertFalse(split.get(i - 1).equals(free.get(0)) && split.get(i).equals(free.get(1)), split.toString());
    }
  }

  @Test
  void greedyOutputIsTheSameAloneBatchedChunkedAndPreempted() {
    int[] p1 = prompt(37, 1);
    int[] p2 = prompt(21, 2);
    int[] p3 = prompt(50, 3);
    List<Integer> a1 = alone(greedy("a", p1, 12));
    List<Integer> a2 = alone(greedy("b", p2, 12));
    List<Integer> a3 = alone(greedy("c", p3, 12));
    assertEquals(12, a1.size());
    assertFalse(a1.equals(a2) && a2.equals(a3), "different prompts give different tokens");

    // Batched together, with a 16-token budget: prefills are chunked and interleave with decode.
    try (BuiltinEngine e = engine(64, 16)) {
      e.add(greedy("a", p1, 12));
      e.add(greedy("b", p2, 12));
      e.add(greedy("c", p3, 12));
      Map<String, List<Integer>> out = runToCompletion(e, new HashMap<>());
      assertEquals(a1, out.get("a"));
      assertEquals(a2, out.get("b"));
      assertEquals(a3, out.get("c"));
      assertEquals(0, e.pool().usedBlocks(), "every block is back in the pool");
    }

    // Two 30-token prompts take 2 blocks each and both need a third at token 32; a pool of 5
    // cannot give both, so one is preempted, recomputed later, and its tokens do not change.
    int[] q1 = prompt(30, 11);
    int[] q2 = prompt(31, 12);
    List<Integer> b1 = alone(greedy("x", q1, 12));
    List<Integer> b2 = alone(greedy("y", q2, 12));
    try (BuiltinEngine e = engine(5, 512)) {
      e.add(greedy("x", q1, 12));
      e.add(greedy("y", q2, 12));
      Map<String, List<Integer>> out = runToCompletion(e, new HashMap<>());
      assertEquals(b1, out.get("x"));
      assertEquals(b2, out.get("y"));
      assertTrue(e.preemptions() > 0, "the small pool forced a preemption");
      assertEquals(0, e.pool().usedBlocks());
    }
  }

  @Test
  void aRepeatedPromptHitsThePrefixCacheAndGivesTheSameTokens() {
    int[] p = prompt(40, 4);
    try (BuiltinEngine e = engine(64, 512)) {
      List<KvEvent> events = new ArrayList<>();
      e.setEventSink(events::add);
      e.add(greedy("first", p, 8));
      Map<String, RequestOutput> last = new HashMap<>();
      List<Integer> first = runToCompletion(e, last).get("first");
      assertEquals(0, last.get("first").cachedTokens());
      assertTrue(events.stream().anyMatch(ev -> ev instanceof KvEvent.Stored), "stored events for full blocks");

      e.add(greedy("second", p, 8));
      List<Integer> second = runToCompletion(e, last).get("second");
      assertEquals(32, last.get("second").cachedTokens(), "two full blocks of the prompt were cached");
      assertEquals(first, second);
    }
  }

  /**
   * The cached prefix's blocks come along; the free ones do not, and the new memory's other bytes
   * (here all ones: NaN in every KV dtype) are never read before the engine writes them.
   */
  @Test
  void theKvCacheMovedToOtherMemoryKeepsItsCachedPrefixes() {
    int[] p = prompt(40, 5);
    int[] other = prompt(70, 9);
    List<Integer> otherAlone = alone(greedy("other", other, 8));
    try (java.lang.foreign.Arena elsewhere = java.lang.foreign.Arena.ofShared(); BuiltinEngine e = engine(64, 512)) {
      e.add(greedy("before", p, 8));
      Map<String, RequestOutput> last = new HashMap<>();
      List<Integer> before = runToCompletion(e, last).get("before");
      MemorySegment oldKeys = e.keys(0);
      e.relocateKv(bytes -> elsewhere.allocate(bytes, 64).fill((byte) 0xff));
      assertNotEquals(oldKeys.address(), e.keys(0).address());
      assertFalse(oldKeys.scope().isAlive(), "the engine's own memory is freed");
      e.add(greedy("after", p, 8));
      List<Integer> after = runToCompletion(e, last).get("after");
      assertEquals(32, last.get("after").cachedTokens(), "the cached prefix came along");
      assertEquals(before, after);
      e.add(greedy("other", other, 8));
      assertEquals(otherAlone, runToCompletion(e, last).get("other"), "a prompt on blocks that were not carried");
    }
  }

  @Test
  void seededSamplingIsReproducibleAndSeedsDiffer() {
    int[] p = prompt(20, 5);
    SamplingParams s1 = params(1.0f, 1f, -1, 0f, 42L, 0f, 0f, 1f);
    SamplingParams s2 = params(1.0f, 1f, -1, 0f, 43L, 0f, 0f, 1f);
    List<Integer> x = alone(sampled("x", p, 16, s1));
    assertEquals(x, alone(sampled("x", p, 16, s1)));
    assertNotEquals(x, alone(sampled("x", p, 16, s2)));
  }

  @Test
  void truncationParametersThatKeepOnlyTheTopTokenAreGreedy() {
    int[] p = prompt(20, 6);
    List<Integer> greedy = alone(greedy("g", p, 10));
    assertEquals(greedy, alone(sampled("k", p, 10, params(1.5f, 1f, 1, 0f, 1L, 0f, 0f, 1f))), "top_k 1");
    assertEquals(greedy, alone(sampled("m", p, 10, params(1.5f, 1f, -1, 1f, 2L, 0f, 0f, 1f))), "min_p 1");
    assertEquals(greedy, alone(sampled("p", p, 10, params(1.5f, 1e-6f, -1, 0f, 3L, 0f, 0f, 1f))), "top_p ~0");
  }

  @Test
  void penaltiesChangeWhatIsPicked() {
    int[] p = prompt(20, 7);
    List<Integer> greedy = alone(greedy("g", p, 30));
    assertTrue(new HashSet<>(greedy).size() < greedy.size(), "plain greedy repeats itself on this model");
    // A huge frequency penalty forbids any token twice; so does a huge presence penalty.
    List<Integer> freq = alone(sampled("f", p, 30, params(0f, 1f, -1, 0f, null, 0f, 1000f, 1f)));
    assertEquals(freq.size(), new HashSet<>(freq).size(), "frequency penalty: no repeats " + freq);
    List<Integer> pres = alone(sampled("r", p, 30, params(0f, 1f, -1, 0f, null, 1000f, 0f, 1f)));
    assertEquals(pres.size(), new HashSet<>(pres).size(), "presence penalty: no repeats " + pres);
    List<Integer> rep = alone(sampled("q", p, 30, params(0f, 1f, -1, 0f, null, 0f, 0f, 1.5f)));
    assertNotEquals(greedy, rep, "repetition penalty changes the greedy path");
  }

  /**
   * A 30-token stream's last 18 tokens three ways: undisturbed, run again as a stream moved after
   * its first 12 (those given as resumed output), and run with those 12 as plain prompt.
   */
  private record Moved(List<Integer> undisturbed, List<Integer> resumed, List<Integer> asPrompt) {}

  private static Moved movedAfter12(int[] p, SamplingParams params) {
    List<Integer> whole = alone(sampled("whole", p, 30, params));
    int k = 12;
    int[] moved = IntStream.concat(java.util.Arrays.stream(p), whole.subList(0, k).stream().mapToInt(Integer::intValue)).toArray();
    List<Integer> rest = alone(new EngineRequest("moved", moved, params, new StopConditions(30 - k, new int[0], true), null, 30 - k,
        null, k));
    return new Moved(whole.subList(k, 30), rest, alone(sampled("prompt", moved, 30 - k, params)));
  }

  @Test
  void aStreamMovedMidWayCountsItsOutputSoFarForPenalties() {
    Moved m = movedAfter12(prompt(20, 7), params(0f, 1f, -1, 0f, null, 0f, 1000f, 1f));
    assertEquals(m.undisturbed(), m.resumed(), "the rest of the same output: its first tokens are penalised as output");
    assertNotEquals(m.undisturbed(), m.asPrompt(), "as plain prompt tokens they are not (the frequency penalty counts output only)");
  }

  @Test
  void aSeededStreamMovedMidWayDrawsTheRestAsIfItHadStayed() {
    Moved m = movedAfter12(prompt(20, 9), params(1.0f, 1f, -1, 0f, 42L, 0f, 0f, 1f));
    assertEquals(m.undisturbed(), m.resumed(), "a draw's random numbers come from the seed and the output position");
    assertNotEquals(m.undisturbed(), m.asPrompt(), "as plain prompt the same tokens start the draws over (position 0)");
  }

  @Test
  void minTokensHoldsBackStopTokensAndEndOfSequenceUntilThen() {
    int[] p = prompt(20, 12);
    List<Integer> free = alone(greedy("free", p, 10));
    int stopAt = free.get(2);
    int k = free.indexOf(stopAt);
    assertEquals(free.subList(0, k + 1), alone(new EngineRequest("stopped", p, SamplingParams.greedy(),
        new StopConditions(10, new int[] {stopAt}, true))), "a stop token ends the output where it is drawn");
    List<Integer> held = alone(new EngineRequest("held", p, SamplingParams.greedy(), new StopConditions(10, new int[] {stopAt}, true, 6)));
    assertTrue(held.size() >= 6 && !held.subList(0, 6).contains(stopAt), "not drawn in the first 6: " + held);
    assertEquals(free.subList(0, k), held.subList(0, k), "the same tokens before its place");
    int eos;
    try (BuiltinEngine e = engine(64, 512)) {
      eos = e.info().eosTokenIds()[0];
    }
    SamplingParams toEos = new SamplingParams(0f, 1f, -1, 0f, OptionalLong.empty(), 0f, 0f, 1f, -1, java.util.Map.of(eos, 100f));
    assertEquals(List.of(eos), alone(new EngineRequest("eos", p, toEos, new StopConditions(10, new int[0], false))),
        "biased to end at once");
    List<Integer> atLeast = alone(new EngineRequest("eos-min", p, toEos, new StopConditions(10, new int[0], false, 4)));
    assertEquals(5, atLeast.size(), "four tokens, then the end it was held from: " + atLeast);
    assertFalse(atLeast.subList(0, 4).contains(eos));
    assertEquals(eos, atLeast.get(4));
  }

  @Test
  void logprobsDescribeTheRawDistribution() {
    int[] p = prompt(20, 11);
    SamplingParams withLogprobs = new SamplingParams(0f, 1f, -1, 0f, OptionalLong.empty(), 0f, 0f, 1f, 3);
    try (BuiltinEngine e = engine(64, 512)) {
      e.add(new EngineRequest("l", p, withLogprobs, new StopConditions(6, new int[0], true)));
      int outputs = 0;
      while (e.hasWork()) {
        for (RequestOutput o : e.step()) {
          assertNotNull(o.logprobs());
          var lp = o.logprobs()[0];
          assertEquals(3, lp.topTokenIds().length);
          // Greedy with no penalties: the chosen token is the most likely one.
          assertEquals(o.newTokens()[0], lp.topTokenIds()[0]);
          assertEquals(lp.logprob(), lp.topLogprobs()[0], 1e-6);
          assertTrue(lp.topLogprobs()[0] >= lp.topLogprobs()[1] && lp.topLogprobs()[1] >= lp.topLogprobs()[2]);
          double mass = 0;
          for (float l : lp.topLogprobs()) {
            assertTrue(l <= 0);
            mass += Math.exp(l);
          }
          assertTrue(mass <= 1 + 1e-5, "top-3 probabilities sum to at most 1: " + mass);
          outputs++;
        }
      }
      assertEquals(6, outputs);
      e.add(greedy("none", p, 2));
      runToCompletion(e, new HashMap<>());
    }
  }

  @Test
  void stopTokensEndTheRequest() {
    int[] p = prompt(20, 8);
    List<Integer> greedy = alone(greedy("g", p, 10));
    int stop = greedy.get(3);
    try (BuiltinEngine e = engine(64, 512)) {
      e.add(new EngineRequest("s", p, SamplingParams.greedy(), new StopConditions(10, new int[] {stop}, true)));
      Map<String, RequestOutput> last = new HashMap<>();
      List<Integer> out = runToCompletion(e, last).get("s");
      assertEquals(greedy.subList(0, greedy.indexOf(stop) + 1), out);
      assertEquals(FinishReason.STOP, last.get("s").finishReason());
    }
  }

  @Test
  void abortFreesBlocksAndBadTokensAreRefused() {
    try (BuiltinEngine e = engine(64, 512)) {
      e.add(greedy("a", prompt(40, 9), 50));
      e.step();
      assertTrue(e.pool().usedBlocks() > 0);
      assertTrue(e.abort("a"));
      assertEquals(0, e.pool().usedBlocks());
      var err = assertThrows(IllegalArgumentException.class, () -> e.add(greedy("b", new int[] {1, 256}, 4)));
      assertTrue(err.getMessage().contains("256"), err.getMessage());
      assertFalse(e.hasWork());
    }
  }

  @Test
  void kvCopiedToAnotherEngineContinuesTokenIdentically() {
    int[] p = prompt(45, 10);
    List<Integer> expected = alone(greedy("a", p, 16));
    try (BuiltinEngine prefill = engine(64, 512);
        BuiltinEngine decode = engine(64, 512)) {
      // Prefill engine: one token, blocks held for the copy.
      prefill.add(greedy("r", p, 1));
      prefill.holdKvOnFinish("r");
      int first = runToCompletion(prefill, new HashMap<>()).get("r").getFirst();
      assertEquals(expected.getFirst(), first);
      int[] held = prefill.heldBlocks("r");
      assertNotNull(held);
      assertEquals(3, held.length);

      PagedKvCache src = prefill.kvCache();
      BuiltinEngine.KvSource copy = (layer, i, keys, values) -> {
        MemorySegment.copy(src.keyBlock(layer, held[i]), 0, keys, 0, keys.byteSize());
        MemorySegment.copy(src.valueBlock(layer, held[i]), 0, values, 0, values.byteSize());
      };
      assertEquals(0, decode.addPrefilled(greedy("r", p, 16), first, copy), "nothing cached on the decode side yet");
      List<Integer> rest = runToCompletion(decode, new HashMap<>()).get("r");
      List<Integer> all = new ArrayList<>(List.of(first));
      all.addAll(rest);
      assertEquals(expected, all);

      // A second copy of the same prompt reuses the two full blocks the decode engine now caches.
      assertEquals(2, decode.addPrefilled(greedy("r2", p, 16), first, copy));
      List<Integer> again = new ArrayList<>(List.of(first));
      again.addAll(runToCompletion(decode, new HashMap<>()).get("r2"));
      assertEquals(expected, again);

      assertTrue(prefill.releaseHeld("r"));
      assertEquals(0, prefill.pool().usedBlocks());
      assertEquals(0, decode.pool().usedBlocks());
    }
  }
}
