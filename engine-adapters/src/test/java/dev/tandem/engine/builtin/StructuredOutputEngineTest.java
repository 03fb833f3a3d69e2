package dev.tandem.engine.builtin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import dev.tandem.common.FinishReason;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StructuredOutput;
import dev.tandem.common.ThinkingBudget;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.grammar.SchemaCorpus;
import dev.tandem.engine.grammar.TokenVocabulary;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The built-in engine with random weights (a tiny Qwen3-shaped model whose 256 ids are the Qwen3
 * tokenizer's byte tokens) constrained by every schema of the corpus: each output, greedy and
 * sampled, is JSON that an independent validator accepts, and a prefilled-elsewhere continuation
 * (the disaggregated path) gives the same tokens as a local run; and a reasoning's thinking
 * budget, alone and before a constrained answer.
 */
class StructuredOutputEngineTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int EOS = 2;
  @TempDir static Path dir;
  static Path model;

  @BeforeAll
  static void createModel() {
    model = TestModels.tinyQwen3(dir.resolve("tiny"), DType.BF16);
  }

  private static BuiltinEngine engine() {
    return BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2).withKvCacheBytes(1L << 24).withBatching(16, 512, true));
  }

  private static EngineRequest request(String id, String schema, SamplingParams sampling, int maxTokens) {
    return new EngineRequest(id, new int[] {10, 20, 30, 40, 50}, sampling, new StopConditions(maxTokens, new int[0], false),
        StructuredOutput.jsonSchema(schema), maxTokens);
  }

  @Test
  @org.junit.jupiter.api.Tag("e2e") // 68 constrained outputs: seconds, kept out of the fast tier
  void everyOutputOfARandomModelValidatesAgainstItsSchema() throws Exception {
    var registry = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);
    try (BuiltinEngine engine = engine()) {
      assertTrue(engine.info().features().contains(EngineInfo.Feature.STRUCTURED_OUTPUTS));
      List<EngineRequest> requests = new ArrayList<>();
      int i = 0;
      for (String schema : SchemaCorpus.SCHEMAS) {
        requests.add(request("g" + i, schema, SamplingParams.greedy(), 64));
        requests.add(request("s" + i, schema, SamplingParams.DEFAULTS.withSeed(OptionalLong.of(i)), 64));
        i++;
      }
      for (EngineRequest r : requests) {
        engine.add(r); // all batched together
      }
      var outputs = run(engine);
      for (EngineRequest r : requests) {
        Output out = outputs.get(r.requestId());
        assertEquals(FinishReason.STOP, out.finish, () -> r.requestId() + " ended by its end token: " + out.text() + " " + out.tokens());
        var errors = registry.getSchema(JSON.readTree(r.structuredOutput().spec()))
            .validate(JSON.readTree(out.text()), ctx -> ctx.executionConfig(c -> c.formatAssertionsEnabled(true)));
        assertEquals(List.of(), errors, () -> r.structuredOutput().spec() + " → " + out.text());
      }
    }
  }

  @Test
  void aRegexAChoiceAndAGrammarConstrainARandomModelsWholeOutput() {
    String grammar = """
        root ::= item ("," item){0,3}
        item ::= "(" [a-c]+ ")" | num
        num  ::= [1-9] [0-9]{0,2}
        """;
    java.util.regex.Pattern sameAsGrammar = java.util.regex.Pattern.compile("(\\([a-c]+\\)|[1-9][0-9]{0,2})(,(\\([a-c]+\\)|[1-9][0-9]{0,2})){0,3}");
    String regex = "[A-Z][a-z]{2,8} \\d{1,3}(\\.\\d)?%";
    List<String> choices = List.of("positive", "negative", "neutral", "mixed feelings");
    try (BuiltinEngine engine = engine()) {
      List<EngineRequest> requests = new ArrayList<>();
      for (int seed = 0; seed < 4; seed++) {
        SamplingParams sampling = greedyOrSeeded(seed);
        requests.add(constrained("regex" + seed, StructuredOutput.regex(regex), sampling));
        requests.add(constrained("choice" + seed, StructuredOutput.choice(
            "[\"positive\",\"negative\",\"neutral\",\"mixed feelings\"]"), sampling));
        requests.add(constrained("grammar" + seed, StructuredOutput.grammar(grammar), sampling));
      }
      var outputs = runToTheirEnds(engine, requests);
      for (EngineRequest r : requests) {
        String text = outputs.get(r.requestId()).text();
        switch (r.structuredOutput().kind()) {
          case REGEX -> assertTrue(text.matches(regex), () -> r.requestId() + " → " + text);
          case CHOICE -> assertTrue(choices.contains(text), () -> r.requestId() + " → " + text);
          default -> assertTrue(sameAsGrammar.matcher(text).matches(), () -> r.requestId() + " → " + text);
        }
      }
      var bad = assertThrows(IllegalArgumentException.class,
          () -> engine.add(constrained("bad", StructuredOutput.grammar("root ::= root \"a\" | \"b\""), SamplingParams.greedy())));
      assertTrue(bad.getMessage().contains("left-recursive"), bad.getMessage());
    }
  }

  @Test
  void aReasoningModelReasonsUnconstrainedThenItsAnswerFollowsTheConstraint() {
    // The output starts inside the reasoning (as DeepSeek-R1's does): a random model rambles until
    // the budget makes the masker close it, then answers one of the choices.
    StructuredOutput c = StructuredOutput.choice("[\"yes\",\"no\"]")
        .withReasoning(new StructuredOutput.Reasoning("<think>", "</think>", true));
    try (BuiltinEngine engine = engine()) {
      List<EngineRequest> requests = new ArrayList<>();
      for (int seed = 0; seed < 4; seed++) {
        requests.add(constrained("r" + seed, c, greedyOrSeeded(seed)));
      }
      var outputs = runToTheirEnds(engine, requests);
      for (EngineRequest r : requests) {
        Output out = outputs.get(r.requestId());
        int close = out.text().indexOf("</think>");
        assertTrue(close > 0, () -> "some reasoning, then its end: " + out.text());
        assertTrue(out.text().substring(close + "</think>".length()).matches("\n{0,2}(yes|no)"), out.text());
      }
    }
    // Moved to another engine in the middle of its reasoning, it goes on as it would have.
    EngineRequest whole = constrained("whole", c, SamplingParams.greedy());
    List<Integer> expected = alone(whole);
    int k = 5;
    int[] prompt = java.util.stream.IntStream.concat(java.util.Arrays.stream(whole.promptTokens()),
        expected.subList(0, k).stream().mapToInt(Integer::intValue)).toArray();
    try (BuiltinEngine other = engine()) {
      other.add(new EngineRequest("moved", prompt, SamplingParams.greedy(), new StopConditions(48 - k, new int[0], false),
          c, 48 - k, null, k));
      assertEquals(expected.subList(k, expected.size()), run(other).get("moved").tokens);
    }
  }

  @Test
  void aStructuralTagHoldsEachStructureARandomModelStartsToItsSchema() {
    // The random model is pushed to write the trigger (a logit bias on its one token) wherever it
    // may: each time, the engine holds it to a whole structure, and it ends within its tokens (free
    // text at the end, where no structure would fit).
    int at = -1;
    for (int t = 0; t < 256 && at < 0; t++) {
      at = java.util.Arrays.equals(qwenByte(t), new byte[] {'@'}) ? t : -1;
    }
    StructuredOutput c = StructuredOutput.structuralTag("""
        {"triggers": ["@"], "structures": [{"begin": "@n=", "end": "!", "schema": {"type": "object",
          "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}}]}
        """);
    java.util.regex.Pattern structures = java.util.regex.Pattern.compile("(@n=\\{\\s*\"n\"\\s*:\\s*-?(0|[1-9][0-9]*)\\s*\\}![^@]*)+");
    try (BuiltinEngine engine = engine()) {
      List<EngineRequest> requests = new ArrayList<>();
      for (int seed = 0; seed < 3; seed++) {
        requests.add(constrained("tag" + seed, c, greedyOrSeeded(seed).withLogitBias(java.util.Map.of(at, 100f))));
      }
      requests.add(constrained("free", c, SamplingParams.greedy()));
      var outputs = runToTheirEnds(engine, requests);
      for (EngineRequest r : requests.subList(0, 3)) {
        String text = outputs.get(r.requestId()).text();
        assertTrue(structures.matcher(text).matches(), () -> r.requestId() + " → " + text);
      }
      String free = outputs.get("free").text();
      assertTrue(!free.contains("@") || structures.matcher(free.substring(free.indexOf('@'))).matches(), free);
    }
  }

  private static final int[] CLOSE = {200, 201}; // a two-token closing tag, in the byte tokens' range

  private static EngineRequest budgeted(String id, int budget, SamplingParams sampling) {
    return new EngineRequest(id, new int[] {10, 20, 30, 40, 50},
        sampling.withThinkingBudget(new ThinkingBudget(budget, new int[] {199}, CLOSE, true)), new StopConditions(16, new int[0], true),
        null, 16);
  }

  /** Where the closing tag first starts in {@code tokens}, or -1. */
  private static int closedAt(List<Integer> tokens, int[] close) {
    for (int i = 0; i + close.length <= tokens.size(); i++) {
      boolean match = true;
      for (int k = 0; k < close.length && match; k++) {
        match = tokens.get(i + k) == close[k];
      }
      if (match) {
        return i;
      }
    }
    return -1;
  }

  @Test
  void aThinkingBudgetForcesTheReasoningClosedOnceSpent() throws Exception {
    // The output starts inside the reasoning; random weights never close it themselves.
    List<EngineRequest> requests = List.of(budgeted("b0", 0, SamplingParams.greedy()), budgeted("b4", 4, greedyOrSeeded(4)),
        budgeted("b9", 9, greedyOrSeeded(9)));
    try (BuiltinEngine engine = engine()) {
      assertTrue(engine.info().features().contains(EngineInfo.Feature.THINKING_BUDGET));
      for (EngineRequest r : requests) {
        engine.add(r); // batched together
      }
      var outputs = run(engine);
      for (EngineRequest r : requests) {
        List<Integer> tokens = outputs.get(r.requestId()).tokens;
        assertEquals(16, tokens.size());
        assertEquals(r.sampling().thinkingBudget().maxTokens(), closedAt(tokens, CLOSE), () -> r.requestId() + " → " + tokens);
      }
    }
    // Moved to another engine mid-reasoning, it counts on from the tokens so far.
    EngineRequest whole = budgeted("whole", 6, SamplingParams.greedy());
    List<Integer> expected = alone(whole);
    int k = 3;
    int[] prompt = java.util.stream.IntStream.concat(java.util.Arrays.stream(whole.promptTokens()),
        expected.subList(0, k).stream().mapToInt(Integer::intValue)).toArray();
    try (BuiltinEngine other = engine()) {
      other.add(new EngineRequest("moved", prompt, whole.sampling(), new StopConditions(16 - k, new int[0], true), null, 16 - k, null, k));
      assertEquals(expected.subList(k, expected.size()), run(other).get("moved").tokens);
    }
    // Prefilled elsewhere with nothing to spend: the prefill worker's one token is the tag's first.
    EngineRequest local = budgeted("local", 0, SamplingParams.greedy());
    List<Integer> split = splitRun(local);
    assertEquals(alone(local), split);
    assertEquals(List.of(CLOSE[0], CLOSE[1]), split.subList(0, 2));
  }

  @Test
  void aThinkingBudgetClosesAReasoningBeforeAConstrainedAnswer() throws Exception {
    TokenVocabulary vocabulary = TokenVocabulary.fromTokenizerJson(Files.readAllBytes(model.resolve("tokenizer.json")), 256, "tiny");
    int[] close = new int["</think>".length()];
    for (int i = 0; i < close.length; i++) {
      for (int t = 0; t < 256; t++) {
        byte[] b = vocabulary.bytes(t);
        if (b != null && b.length == 1 && b[0] == "</think>".charAt(i)) {
          close[i] = t;
        }
      }
    }
    StructuredOutput c = StructuredOutput.choice("[\"yes\",\"no\"]")
        .withReasoning(new StructuredOutput.Reasoning("<think>", "</think>", true));
    List<EngineRequest> requests = new ArrayList<>();
    for (int seed = 0; seed < 3; seed++) {
      requests.add(constrained("t" + seed, c, greedyOrSeeded(seed).withThinkingBudget(new ThinkingBudget(3, new int[] {1}, close, true))));
    }
    try (BuiltinEngine engine = engine()) {
      var outputs = runToTheirEnds(engine, requests);
      for (EngineRequest r : requests) {
        Output out = outputs.get(r.requestId());
        int at = closedAt(out.tokens, close);
        assertTrue(at >= 0 && at <= 3, () -> "closed within the budget: " + out.tokens);
        assertTrue(out.text().substring(out.text().indexOf("</think>") + 8).matches("\n{0,2}(yes|no)"), out.text());
      }
    }
  }

  private static SamplingParams greedyOrSeeded(int seed) {
    return seed == 0 ? SamplingParams.greedy() : SamplingParams.DEFAULTS.withSeed(OptionalLong.of(seed));
  }

  /** Runs {@code requests} batched together; each must end with its end token. */
  private static java.util.Map<String, Output> runToTheirEnds(BuiltinEngine engine, List<EngineRequest> requests) {
    for (EngineRequest r : requests) {
      engine.add(r);
    }
    var outputs = run(engine);
    for (EngineRequest r : requests) {
      Output out = outputs.get(r.requestId());
      assertEquals(FinishReason.STOP, out.finish, () -> r.requestId() + " ended by its end token: " + out.text());
    }
    return outputs;
  }

  private static EngineRequest constrained(String id, StructuredOutput c, SamplingParams sampling) {
    return new EngineRequest(id, new int[] {10, 20, 30, 40, 50}, sampling, new StopConditions(48, new int[0], false), c, 48);
  }

  /** The tokens {@code request} produces alone on a fresh engine. */
  private static List<Integer> alone(EngineRequest request) {
    try (BuiltinEngine engine = engine()) {
      engine.add(request);
      return run(engine).get(request.requestId()).tokens;
    }
  }

  @Test
  void aContinuationPrefilledElsewhereFollowsTheSameGrammar() throws Exception {
    String schema = SchemaCorpus.SCHEMAS.get(5);
    EngineRequest local = request("local", schema, SamplingParams.greedy(), 48);
    assertEquals(alone(local), splitRun(local));
  }

  /**
   * The tokens of {@code local} run disaggregated: its first token drawn by a prefill engine, which
   * hands its KV blocks to a decode engine that goes on from there.
   */
  private static List<Integer> splitRun(EngineRequest local) {
    try (BuiltinEngine prefill = engine(); BuiltinEngine decode = engine()) {
      EngineRequest first = new EngineRequest("split", local.promptTokens(), local.sampling(),
          new StopConditions(1, new int[0], true), local.structuredOutput(), local.outputBudget());
      prefill.add(first);
      prefill.holdKvOnFinish("split");
      int firstToken = run(prefill).get("split").tokens.get(0);
      int[] blocks = prefill.heldBlocks("split");
      PagedKvCache kv = prefill.kvCache();
      decode.addPrefilled(new EngineRequest("split", local.promptTokens(), local.sampling(), local.stop(),
          local.structuredOutput(), local.outputBudget()), firstToken, (layer, index, keys, values) -> {
            keys.copyFrom(kv.keyBlock(layer, blocks[index]));
            values.copyFrom(kv.valueBlock(layer, blocks[index]));
          });
      List<Integer> split = new ArrayList<>(List.of(firstToken));
      split.addAll(run(decode).get("split").tokens);
      prefill.releaseHeld("split");
      return split;
    }
  }

  @Test
  void aConstrainedOutputResumesOnAnotherEngineAfterTheTokensSoFar() {
    String schema = SchemaCorpus.SCHEMAS.get(8);
    EngineRequest whole = request("whole", schema, SamplingParams.greedy(), 64);
    List<Integer> expected = alone(whole);
    int k = expected.size() / 2;
    int[] prompt = java.util.stream.IntStream.concat(java.util.Arrays.stream(whole.promptTokens()),
        expected.subList(0, k).stream().mapToInt(Integer::intValue)).toArray();
    try (BuiltinEngine other = engine()) {
      other.add(new EngineRequest("moved", prompt, SamplingParams.greedy(), new StopConditions(64 - k, new int[0], false),
          whole.structuredOutput(), 64 - k, null, k));
      assertEquals(expected.subList(k, expected.size()), run(other).get("moved").tokens, "the rest of the same output");
      var bad = assertThrows(IllegalArgumentException.class, () -> other.add(new EngineRequest("bad", new int[] {10, 20, 30},
          SamplingParams.greedy(), new StopConditions(8, new int[0], false), whole.structuredOutput(), 8, null, 2)));
      assertTrue(bad.getMessage().contains("leaves its grammar"), bad.getMessage());
    }
  }

  @Test
  void aSchemaTheEngineCannotCompileIsRefusedBeforeItIsQueued() {
    try (BuiltinEngine engine = engine()) {
      var e = assertThrows(IllegalArgumentException.class,
          () -> engine.add(request("bad", "{\"type\":\"number\",\"not\":{\"const\":3}}", SamplingParams.greedy(), 8)));
      assertTrue(e.getMessage().contains("'not'"), e.getMessage());
      assertTrue(!engine.hasWork());
    }
  }

  @Test
  void withoutTokenizerJsonTheFeatureIsNotOffered() throws Exception {
    Path bare = dir.resolve("bare");
    ModelGenerator.write(TestModels.tinyQwen3Config(), DType.F32, 5, bare, 0);
    Files.delete(bare.resolve("tokenizer.json"));
    try (BuiltinEngine engine = BuiltinEngine.open(BuiltinConfig.of(bare).withCompute("cpu", 1).withKvCacheBytes(1L << 22))) {
      assertTrue(!engine.info().features().contains(EngineInfo.Feature.STRUCTURED_OUTPUTS));
      var e = assertThrows(IllegalArgumentException.class, () -> engine.add(request("x", "{}", SamplingParams.greedy(), 4)));
      assertTrue(e.getMessage().contains("tokenizer.json"), e.getMessage());
    }
  }

  private record Output(List<Integer> tokens, FinishReason finish, String text) {}

  private static java.util.Map<String, Output> run(BuiltinEngine engine) {
    java.util.Map<String, List<Integer>> tokens = new java.util.HashMap<>();
    java.util.Map<String, FinishReason> finish = new java.util.HashMap<>();
    for (int guard = 0; engine.hasWork() && guard < 10_000; guard++) {
      for (RequestOutput o : engine.step()) {
        for (int t : o.newTokens()) {
          tokens.computeIfAbsent(o.requestId(), k -> new ArrayList<>()).add(t);
        }
        if (o.finishReason() != null) {
          finish.put(o.requestId(), o.finishReason());
        }
      }
    }
    java.util.Map<String, Output> out = new java.util.HashMap<>();
    for (var e : tokens.entrySet()) {
      ByteArrayOutputStream text = new ByteArrayOutputStream();
      for (int t : e.getValue()) {
        if (t != EOS) {
          text.writeBytes(qwenByte(t));
        }
      }
      out.put(e.getKey(), new Output(e.getValue(), finish.get(e.getKey()), text.toString(java.nio.charset.StandardCharsets.UTF_8)));
    }
    return out;
  }

  private static byte[] qwenByte(int token) {
    return VOCAB.bytes(token);
  }

  private static final dev.tandem.engine.grammar.TokenVocabulary VOCAB =
      dev.tandem.engine.grammar.TokenVocabulary.fromTokenizerJson(
          dev.tandem.engine.ModelFiles.bundledQwen3().tokenizerJson(), 256, "bundled Qwen3 tokenizer");
}
