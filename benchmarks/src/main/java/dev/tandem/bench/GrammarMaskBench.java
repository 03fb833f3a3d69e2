package dev.tandem.bench;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StructuredOutput;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.grammar.Grammar;
import dev.tandem.engine.grammar.GrammarState;
import dev.tandem.engine.grammar.OutputGrammars;
import dev.tandem.engine.grammar.TokenMasker;
import dev.tandem.engine.grammar.TokenVocabulary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The cost of constrained decoding. (1) The token mask at the Qwen3 vocabulary (151,936 ids),
 * per generated token, p50/p99, for typical agent schemas and for vLLM's {@code structured_outputs}
 * text constraints (a regular expression, choices, EBNF grammars), with a model that has no preference
 * (each token drawn uniformly from the allowed ones: the widest walk) — the first output of each
 * schema (cold: its frames' masks computed) and the ones after (warm: cached). (2) Decode
 * throughput of the built-in engine at batch 8 with and without a schema, same model, rounds
 * interleaved.
 *
 * <pre>java ... dev.tandem.bench.GrammarMaskBench MODEL_DIR OUT_DIR [threads] [rounds]</pre>
 */
public final class GrammarMaskBench {
  private static final int[] ENDS = {151_645};
  static final Map<String, String> SCHEMAS = new LinkedHashMap<>();

  static {
    SCHEMAS.put("json_object", "{\"type\":\"object\"}");
    SCHEMAS.put("person", "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\",\"minimum\":0,"
        + "\"maximum\":150},\"email\":{\"type\":\"string\",\"format\":\"email\"}},\"required\":[\"name\",\"age\",\"email\"],\"additionalProperties\":false}");
    SCHEMAS.put("tool call", "{\"type\":\"object\",\"properties\":{\"name\":{\"const\":\"get_weather\"},\"arguments\":{\"type\":\"object\","
        + "\"properties\":{\"city\":{\"type\":\"string\"},\"unit\":{\"enum\":[\"celsius\",\"fahrenheit\"]},\"days\":{\"type\":\"integer\","
        + "\"minimum\":1,\"maximum\":14}},\"required\":[\"city\",\"unit\",\"days\"]}},\"required\":[\"name\",\"arguments\"]}");
    SCHEMAS.put("order list", "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
        + "{\"sku\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{4}$\"},\"qty\":{\"type\":\"integer\",\"minimum\":1},\"note\":{\"type\":\"string\","
        + "\"maxLength\":40}},\"required\":[\"sku\",\"qty\"]}}},\"required\":[\"items\"]}");
    SCHEMAS.put("recursive tree", "{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"label\":{\"type\":\"string\"},\"children\":"
        + "{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}}},\"required\":[\"label\"]}},\"$ref\":\"#/$defs/n\"}");
  }

  /** Every constraint measured: the schemas above, then vLLM's text constraints. */
  static final Map<String, StructuredOutput> CONSTRAINTS = new LinkedHashMap<>();

  static {
    SCHEMAS.forEach((name, schema) -> CONSTRAINTS.put(name, StructuredOutput.jsonSchema(schema)));
    CONSTRAINTS.put("regex: phone", StructuredOutput.regex("\\(\\d{3}\\) \\d{3}-\\d{4}( ext\\. \\d{1,5})?"));
    CONSTRAINTS.put("regex: sentence", StructuredOutput.regex("[A-Z][a-z]+( [a-z]+){2,30}[.!?]"));
    CONSTRAINTS.put("choice: 3", StructuredOutput.choice("[\"positive\",\"negative\",\"neutral\"]"));
    StringBuilder labels = new StringBuilder("[");
    for (int i = 0; i < 1000; i++) {
      labels.append(i == 0 ? "" : ",").append("\"category/").append(Integer.toString(i * 7919 % 100_000, 36)).append('"');
    }
    CONSTRAINTS.put("choice: 1,000", StructuredOutput.choice(labels.append(']').toString()));
    CONSTRAINTS.put("ebnf: arithmetic", StructuredOutput.grammar("""
        root ::= expr
        expr ::= term (ws [+-] ws term)*
        term ::= factor (ws [*/] ws factor)*
        factor ::= [0-9]+ ("." [0-9]+)? | "(" ws expr ws ")"
        ws ::= " "?
        """));
    CONSTRAINTS.put("ebnf: sql select", StructuredOutput.grammar("""
        root ::= "SELECT " cols " FROM " table (" WHERE " cond (" AND " cond)*)? ";"
        cols ::= "*" | col (", " col)*
        col ::= "id" | "name" | "email" | "created_at" | "total"
        table ::= "users" | "orders" | "payments"
        cond ::= col " " op " " value
        op ::= "=" | "<" | ">" | "<=" | ">=" | "!="
        value ::= [0-9]+ | "'" [^'\\n]* "'"
        """));
  }

  static {
    // vLLM's structural tag as a tool-calling format: free text, and a call wherever "<function=" is written.
    CONSTRAINTS.put("structural tag", StructuredOutput.structuralTag("{\"triggers\":[\"<function=\"],\"structures\":["
        + "{\"begin\":\"<function=get_weather>\",\"schema\":" + SCHEMAS.get("tool call").replace("\"get_weather\"", "\"w\"")
        + ",\"end\":\"</function>\"},{\"begin\":\"<function=get_time>\",\"schema\":{\"type\":\"object\",\"properties\":"
        + "{\"tz\":{\"type\":\"string\"}},\"required\":[\"tz\"]},\"end\":\"</function>\"}]}"));
  }

  /**
   * What the frontend gives a chat request under {@code tool_choice: auto} with one hermes-format
   * tool (a weather function), after Qwen3's optional reasoning: free text, and after each
   * {@code <tool_call>} a valid call of it.
   */
  static final StructuredOutput TOOL_CALLS = StructuredOutput.structuralTag("{\"structures\":[{\"begin\":\"<tool_call>\\n\","
      + "\"schema\":{\"type\":\"object\",\"properties\":{\"name\":{\"const\":\"get_weather\"},\"arguments\":{\"type\":\"object\","
      + "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"}},\"required\":[\"city\"]}},"
      + "\"required\":[\"name\",\"arguments\"]},\"end\":\"\\n</tool_call>\"}],\"triggers\":[\"<tool_call>\"]}")
      .withReasoning(new StructuredOutput.Reasoning("<think>", "</think>", false));

  /** A reasoning model's output: free text up to {@code </think>}, then the constrained answer. */
  static final StructuredOutput.Reasoning THINKING = new StructuredOutput.Reasoning("<think>", "</think>", true);

  static {
    CONSTRAINTS.put("think, person", StructuredOutput.jsonSchema(SCHEMAS.get("person")).withReasoning(THINKING));
    CONSTRAINTS.put("think, choice 3", CONSTRAINTS.get("choice: 3").withReasoning(THINKING));
  }

  private GrammarMaskBench() {}

  public static void main(String[] args) throws Exception {
    Path model = Path.of(args[0]);
    Path out = Path.of(args[1]);
    int threads = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    Files.createDirectories(out);

    long t0 = System.nanoTime();
    TokenMasker masker = new TokenMasker(TokenVocabulary.fromTokenizerJson(
        ModelFiles.bundledQwen3().tokenizerJson(), 151_936, "bundled Qwen3 tokenizer"));
    System.out.printf(Locale.ROOT, "token trie over 151,936 ids built in %.0f ms%n", (System.nanoTime() - t0) / 1e6);
    // Warm the JIT on grammars of their own (compiled again below: new frames, so cold caches).
    for (StructuredOutput c : CONSTRAINTS.values()) {
      Grammar g = OutputGrammars.compile(c);
      for (int k = 0; k < 3; k++) {
        generate(masker, g, new SplittableRandom(100 + k), 256, new ArrayList<>(), null);
      }
    }
    System.out.println("mask cost per generated token (µs), uniform random model, 256-token budget, 20 outputs per constraint");
    System.out.println("constraint       | cold p50 | cold p99 | warm p50 | warm p99 | warm max | tokens | warm, away from the budget: p50 | p99");
    Map<String, double[]> rows = new LinkedHashMap<>();
    List<Long> allWarm = new ArrayList<>();
    List<Long> allFree = new ArrayList<>();
    List<Long> textWarm = new ArrayList<>();
    List<Long> textFree = new ArrayList<>();
    for (var e : CONSTRAINTS.entrySet()) {
      boolean schema = e.getValue().kind() == StructuredOutput.Kind.JSON_SCHEMA && e.getValue().reasoning().none();
      Grammar g = OutputGrammars.compile(e.getValue());
      List<Long> cold = new ArrayList<>();
      List<Long> warm = new ArrayList<>();
      List<Long> free = new ArrayList<>();
      for (int k = 0; k < 20; k++) {
        generate(masker, g, new SplittableRandom(k), 256, k == 0 ? cold : warm, k == 0 ? null : free);
      }
      (schema ? allWarm : textWarm).addAll(warm);
      (schema ? allFree : textFree).addAll(free);
      double[] r = {pct(cold, 50), pct(cold, 99), pct(warm, 50), pct(warm, 99), pct(warm, 100)};
      rows.put(e.getKey(), r);
      System.out.printf(Locale.ROOT, "%-16s | %8.1f | %8.1f | %8.1f | %8.1f | %8.1f | %6d | %8.1f | %8.1f%n",
          e.getKey(), r[0], r[1], r[2], r[3], r[4], cold.size() + warm.size(), pct(free, 50), pct(free, 99));
    }
    System.out.printf(Locale.ROOT, "all warm masks (schemas): p50 %.1f µs, p99 %.1f µs; away from the budget (%d of %d): p50 %.1f µs, "
        + "p99 %.1f µs (target p99 < 100 µs; xgrammar reports tens of µs)%n",
        pct(allWarm, 50), pct(allWarm, 99), allFree.size(), allWarm.size(), pct(allFree, 50), pct(allFree, 99));
    System.out.printf(Locale.ROOT, "all warm masks (regex, choice, EBNF, structural tag, after reasoning): p50 %.1f µs, p99 %.1f µs; away from the budget (%d of %d): "
        + "p50 %.1f µs, p99 %.1f µs%n",
        pct(textWarm, 50), pct(textWarm, 99), textFree.size(), textWarm.size(), pct(textFree, 50), pct(textFree, 99));
    chart(rows, out.resolve("mask-cost.png"));

    // (2) Decode throughput with vs without a schema, batch 8.
    BuiltinConfig config = BuiltinConfig.of(model).withCompute("cpu", threads).withKvCacheBytes(1L << 30).withBatching(8, 2048, true);
    try (BuiltinEngine engine = BuiltinEngine.open(config)) {
      System.out.println("decode at batch 8, 96 tokens each, greedy (" + model.getFileName() + ", " + threads + " threads)");
      List<Double> free = new ArrayList<>();
      List<Double> constrained = new ArrayList<>();
      List<Double> shares = new ArrayList<>();
      List<Double> thinking = new ArrayList<>();
      List<Double> thinkingShares = new ArrayList<>();
      List<Double> tools = new ArrayList<>();
      List<Double> toolShares = new ArrayList<>();
      StructuredOutput object = StructuredOutput.JSON_OBJECT;
      StructuredOutput afterThinking = object.withReasoning(THINKING);
      decode(engine, null, 0); // warm-up, and the trie
      decode(engine, object, 0);
      decode(engine, afterThinking, 0);
      decode(engine, TOOL_CALLS, 0);
      for (int round = 1; round <= rounds; round++) {
        free.add(decode(engine, null, round));
        long freeTokens = lastTokens;
        long freeSteps = lastSteps;
        constrained.add(decode(engine, object, round));
        shares.add(lastMaskShare);
        System.out.printf(Locale.ROOT, "round %d: free %.1f tokens/s (%d tokens in %d steps); json_object %.1f tokens/s (%d in %d: "
                + "outputs end when their object does, the batch thins); masking %.0f µs per constrained token = %.1f%% of the decode time%n",
            round, free.getLast(), freeTokens, freeSteps, constrained.getLast(), lastTokens, lastSteps,
            lastMaskPerToken, 100 * lastMaskShare);
        thinking.add(decode(engine, afterThinking, round));
        thinkingShares.add(lastMaskShare);
        System.out.printf(Locale.ROOT, "round %d: reasoning, then json_object: %.1f tokens/s (%d in %d steps: the random model reasons "
                + "until the budget closes it); masking %.0f µs per token = %.1f%% of the decode time%n",
            round, thinking.getLast(), lastTokens, lastSteps, lastMaskPerToken, 100 * lastMaskShare);
        tools.add(decode(engine, TOOL_CALLS, round));
        toolShares.add(lastMaskShare);
        System.out.printf(Locale.ROOT, "round %d: tool calls held to their tool (tool_choice auto): %.1f tokens/s (%d in %d steps: free "
                + "text, the random model writes no call); masking %.0f µs per token = %.1f%% of the decode time%n",
            round, tools.getLast(), lastTokens, lastSteps, lastMaskPerToken, 100 * lastMaskShare);
      }
      double f = median(free);
      double c = median(constrained);
      System.out.printf(Locale.ROOT, "median: free %.1f tokens/s, json_object %.1f tokens/s; constrained decoding's own share of the "
          + "decode time %.1f%% (target < 10%% slowdown)%n", f, c, 100 * median(shares));
      System.out.printf(Locale.ROOT, "median: reasoning, then json_object %.1f tokens/s (%.2f× free); constrained decoding's share %.1f%%%n",
          median(thinking), median(thinking) / f, 100 * median(thinkingShares));
      System.out.printf(Locale.ROOT, "median: tool calls held to their tool %.1f tokens/s (%.2f× free); constrained decoding's share %.1f%%%n",
          median(tools), median(tools) / f, 100 * median(toolShares));
    }
  }

  /** Decode tokens/s of 8 sequences (prefill excluded), constrained by {@code constraint} or free (null). */
  private static double decode(BuiltinEngine engine, StructuredOutput constraint, int round) {
    SplittableRandom random = new SplittableRandom(round);
    for (int i = 0; i < 8; i++) {
      int[] prompt = random.ints(64, 0, 100_000).toArray();
      String kind = constraint == null ? "f" : constraint == TOOL_CALLS ? "a" : constraint.reasoning().none() ? "c" : "t";
      engine.add(new EngineRequest("r" + round + "-" + i + kind, prompt, SamplingParams.greedy(),
          new StopConditions(96, new int[0], constraint == null), constraint, 96));
    }
    while (engine.load().queuedPrefillTokens() > 0 || engine.load().waitingRequests() > 0) {
      engine.step();
    }
    long start = System.nanoTime();
    long masking = engine.constrainedDecodingNanos();
    long tokens = 0;
    long steps = 0;
    while (engine.hasWork()) {
      tokens += engine.step().size();
      steps++;
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    lastMaskShare = (engine.constrainedDecodingNanos() - masking) / 1e9 / seconds;
    lastMaskPerToken = (engine.constrainedDecodingNanos() - masking) / 1e3 / Math.max(1, tokens);
    lastSteps = steps;
    lastTokens = tokens;
    return tokens / seconds;
  }

  private static long lastSteps;
  private static double lastMaskShare;
  private static double lastMaskPerToken;
  private static long lastTokens;

  /** {@code free} (may be null) also gets the times of masks not checked against the budget. */
  private static void generate(TokenMasker masker, Grammar g, SplittableRandom random, int maxTokens, List<Long> nanos, List<Long> free) {
    GrammarState state = g.newState();
    long[] mask = new long[masker.maskWords()];
    for (int step = 0; step < maxTokens; step++) {
      long checks = masker.budgetWalks() + masker.budgetLookups();
      long t = System.nanoTime();
      int n = masker.mask(state, maxTokens - step, ENDS, mask);
      long dt = System.nanoTime() - t;
      nanos.add(dt);
      if (free != null && masker.budgetWalks() + masker.budgetLookups() == checks) {
        free.add(dt);
      }
      int k = random.nextInt(n);
      int token = -1;
      for (int w = 0; w < mask.length && token < 0; w++) {
        int c = Long.bitCount(mask[w]);
        if (k < c) {
          long word = mask[w];
          for (int i = 0; i < k; i++) {
            word &= word - 1;
          }
          token = w * 64 + Long.numberOfTrailingZeros(word);
        } else {
          k -= c;
        }
      }
      if (token == ENDS[0]) {
        return;
      }
      state.advance(masker.vocabulary().bytes(token));
    }
  }

  private static double pct(List<Long> nanos, int p) {
    long[] s = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
    if (s.length == 0) {
      return Double.NaN;
    }
    return s[Math.min(s.length - 1, (int) Math.ceil(p / 100.0 * s.length) - (p == 100 ? 1 : 0))] / 1e3;
  }

  private static double median(List<Double> v) {
    double[] s = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return s[s.length / 2];
  }

  private static void chart(Map<String, double[]> rows, Path png) throws Exception {
    CategoryChart chart = new CategoryChartBuilder().width(1600).height(600)
        .title("Token mask cost per generated token at the Qwen3 vocabulary (µs, log scale)")
        .xAxisTitle("constraint").yAxisTitle("µs").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
    chart.getStyler().setYAxisLogarithmic(true);
    chart.getStyler().setYAxisMin(0.1);
    List<String> x = new ArrayList<>(rows.keySet());
    String[] names = {"cold p50", "cold p99", "warm p50", "warm p99"};
    for (int i = 0; i < names.length; i++) {
      int col = i;
      chart.addSeries(names[i], x, x.stream().map(k -> Double.isNaN(rows.get(k)[col]) ? 0.1 : Math.max(0.1, rows.get(k)[col])).toList());
    }
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    System.out.println("chart: " + png + " " + Arrays.toString(names));
  }
}
