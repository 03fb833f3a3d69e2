package dev.tandem.engine.builtin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StructuredOutput;
import dev.tandem.common.TokenLogprob;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.SpeculationCounts;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.sched.SpeculativeConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Speculative decoding on the real transformer: what comes out is what comes out without it (the
 * same greedy tokens and log-probabilities; for sampling, the same distribution, {@link
 * #aProposedTokenIsDrawnWithTheModelsProbability}), while proposals are run and kept.
 */
class SpeculativeDecodingTest {
  private static final SpeculativeConfig NGRAM = new SpeculativeConfig(4, 3, 1);
  @TempDir static Path dir;
  static Path model;

  @BeforeAll
  static void createModel() {
    model = TestModels.tinyQwen3(dir.resolve("tiny"), DType.F32);
  }

  private static BuiltinEngine engine(SpeculativeConfig speculation) {
    return BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2).withKvCacheBytes(8L << 20)
        .withBatching(16, 256, true).withSpeculative(speculation));
  }

  /** A prompt that repeats a 9-token phrase, as quoted or edited text does. */
  private static int[] repetitive(int salt) {
    return IntStream.range(0, 45).map(i -> (i % 9 * 31 + salt * 17 + 3) % 250).toArray();
  }

  private static EngineRequest request(String id, int[] prompt, int maxTokens, SamplingParams p) {
    return new EngineRequest(id, prompt, p, new StopConditions(maxTokens, new int[0], true));
  }

  /** Runs every request to its end; returns each one's outputs in order. */
  private static Map<String, List<RequestOutput>> run(BuiltinEngine e, EngineRequest... requests) {
    for (EngineRequest r : requests) {
      e.add(r);
    }
    Map<String, List<RequestOutput>> out = new HashMap<>();
    for (int steps = 0; e.hasWork(); steps++) {
      assertTrue(steps < 10_000, "the engine did not finish");
      for (RequestOutput o : e.step()) {
        out.computeIfAbsent(o.requestId(), k -> new ArrayList<>()).add(o);
      }
    }
    return out;
  }

  private static int[] tokens(List<RequestOutput> outputs) {
    return outputs.stream().flatMapToInt(o -> java.util.Arrays.stream(o.newTokens())).toArray();
  }

  private static List<TokenLogprob> logprobs(List<RequestOutput> outputs) {
    List<TokenLogprob> all = new ArrayList<>();
    for (RequestOutput o : outputs) {
      assertNotNull(o.logprobs(), "logprobs asked for");
      assertEquals(o.newTokens().length, o.logprobs().length, "one logprob per token, however many a step keeps");
      all.addAll(List.of(o.logprobs()));
    }
    return all;
  }

  @Test
  void greedyTokensAndLogprobsAreThoseWithoutSpeculationWhileProposalsAreKept() {
    SamplingParams greedyWithLogprobs = new SamplingParams(0f, 1f, 0, 0f, OptionalLong.empty(), 0f, 0f, 1f, 3);
    EngineRequest[] requests = {
      request("a", repetitive(1), 60, greedyWithLogprobs),
      request("b", repetitive(2), 40, greedyWithLogprobs),
      request("c", IntStream.range(0, 30).map(i -> (i * 37 + 5) % 250).toArray(), 50, greedyWithLogprobs),
    };
    Map<String, List<RequestOutput>> plain;
    try (BuiltinEngine e = engine(SpeculativeConfig.OFF)) {
      plain = run(e, requests);
      assertEquals(SpeculationCounts.NONE, e.speculationCounts());
    }
    try (BuiltinEngine e = engine(NGRAM)) {
      Map<String, List<RequestOutput>> speculated = run(e, requests);
      for (EngineRequest r : requests) {
        String id = r.requestId();
        assertArrayEquals(tokens(plain.get(id)), tokens(speculated.get(id)), id);
        List<TokenLogprob> a = logprobs(plain.get(id));
        List<TokenLogprob> b = logprobs(speculated.get(id));
        for (int i = 0; i < a.size(); i++) {
          assertEquals(a.get(i).logprob(), b.get(i).logprob(), 1e-4, id + " token " + i);
          assertArrayEquals(a.get(i).topTokenIds(), b.get(i).topTokenIds(), id + " token " + i);
        }
      }
      SpeculationCounts c = e.speculationCounts();
      assertTrue(c.accepted() > 0, "some proposals kept: " + c);
      int outputs = speculated.values().stream().mapToInt(List::size).sum();
      int tokens = speculated.values().stream().mapToInt(o -> tokens(o).length).sum();
      assertTrue(outputs < tokens, "some steps gave more than one token: " + outputs + " outputs for " + tokens + " tokens");
      assertEquals(0, e.pool().usedBlocks(), "every block back in the pool");
    }
  }

  @Test
  void aConstrainedOutputIsSpeculatedUnderItsGrammarAndComesOutTheSame() {
    SamplingParams greedyWithLogprobs = new SamplingParams(0f, 1f, 0, 0f, OptionalLong.empty(), 0f, 0f, 1f, 3);
    StructuredOutput[] constraints = {
      StructuredOutput.regex("[a-e]{60}"),
      StructuredOutput.jsonSchema("{\"type\":\"array\",\"items\":{\"enum\":[\"ab\",\"cd\"]},\"minItems\":14,\"maxItems\":14}"),
      StructuredOutput.grammar("root ::= (\"yes\" | \"no\" | \"maybe\") (\", \" (\"yes\" | \"no\" | \"maybe\")){15}"),
    };
    EngineRequest[] requests = new EngineRequest[constraints.length];
    for (int i = 0; i < constraints.length; i++) {
      requests[i] = new EngineRequest("c" + i, repetitive(i), greedyWithLogprobs, new StopConditions(100, new int[0], false),
          constraints[i], 100);
    }
    Map<String, List<RequestOutput>> plain;
    try (BuiltinEngine e = engine(SpeculativeConfig.OFF)) {
      plain = run(e, requests);
    }
    try (BuiltinEngine e = engine(NGRAM)) {
      Map<String, List<RequestOutput>> speculated = run(e, requests);
      for (EngineRequest r : requests) {
        assertArrayEquals(tokens(plain.get(r.requestId())), tokens(speculated.get(r.requestId())), r.structuredOutput().spec());
        List<TokenLogprob> a = logprobs(plain.get(r.requestId()));
        List<TokenLogprob> b = logprobs(speculated.get(r.requestId()));
        for (int i = 0; i < a.size(); i++) {
          assertEquals(a.get(i).logprob(), b.get(i).logprob(), 1e-4, r.requestId() + " token " + i);
        }
      }
      SpeculationCounts c = e.speculationCounts();
      assertTrue(c.accepted() > 0, "proposals kept under a grammar: " + c);
      assertEquals(0, e.pool().usedBlocks(), "every block back in the pool");
    }
  }

  @Test
  void seededSamplingWithSpeculationRepeatsItself() {
    SamplingParams seeded = new SamplingParams(0.8f, 0.95f, 40, 0f, OptionalLong.of(7), 0f, 0f, 1f, -1);
    int[] first;
    try (BuiltinEngine e = engine(NGRAM)) {
      first = tokens(run(e, request("s", repetitive(3), 40, seeded)).get("s"));
      assertTrue(e.speculationCounts().drafted() > 0, "the repeated prompt was looked up");
    }
    try (BuiltinEngine e = engine(NGRAM)) {
      assertArrayEquals(first, tokens(run(e, request("s", repetitive(3), 40, seeded)).get("s")));
    }
    assertEquals(40, first.length);
  }

  @Test
  void aProposedTokenIsDrawnWithTheModelsProbability() {
    // The token drawn at a position with a proposal is distributed as without it: p(token) from the
    // logits after temperature and top-k, whether the proposal is likely, unlikely or cut by top-k.
    float[] logits = {2f, 1f, 0f, -1f, 0.5f, -3f};
    SamplingParams p = new SamplingParams(1.5f, 1f, 5, 0f, OptionalLong.of(11), 0f, 0f, 1f, -1);
    double[] expected = new double[logits.length];
    double sum = 0;
    for (int i = 0; i < 5; i++) { // top-k 5 drops token 5
      expected[i] = Math.exp(logits[i] / 1.5);
      sum += expected[i];
    }
    for (int i = 0; i < 5; i++) {
      expected[i] /= sum;
    }
    Sampler sampler = new Sampler();
    for (int draft : new int[] {-1, 0, 3, 5}) {
      Sampler.State state = new Sampler.State(p, new int[0]);
      int n = 200_000;
      int[] counts = new int[logits.length];
      for (int k = 0; k < n; k++) { // each at the next output position, as the engine draws them
        int token = sampler.sample(logits.clone(), p, state, draft);
        counts[token]++;
        state.accept(token);
      }
      for (int i = 0; i < logits.length; i++) {
        double sigma = Math.sqrt(expected[i] * (1 - expected[i]) / n);
        assertEquals(expected[i], counts[i] / (double) n, 5 * sigma + 1e-9, "draft " + draft + ", token " + i);
      }
    }
  }
}
