package dev.tandem.bench;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StructuredOutput;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.SpeculationCounts;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.builtin.PagedKvCache;
import dev.tandem.engine.builtin.Transformer;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ComputeBackends;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.engine.sched.SpeculativeConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * What n-gram speculative decoding costs and gains at batch 1 on the built-in engine.
 *
 * <p><b>Pass cost.</b> One forward pass that verifies k proposed tokens runs k + 1 tokens through
 * the model and the LM head (every position's logits), where a plain decode step runs one. Timed
 * on the engine's own {@link Transformer} at a context of {@code context} tokens, median of 12
 * passes, for k = 0 (the plain step) to 8. Its ratio to the plain step is the number
 * of tokens a pass must yield to break even: a pass whose proposals are all rejected yields one.
 *
 * <p><b>End to end.</b> The same greedy request ({@code context} random prompt tokens, {@code
 * tokens} generated) on an engine without speculation and on engines proposing k = 2, 4, 8
 * ({@code prompt_lookup_max} 4, min 2), in rounds that rotate the order; decode tokens/s from the
 * first token to the last, the proposals drafted and kept, tokens per step, and whether the tokens
 * are identical (they must be). A generated model's own output is what the lookup finds here.
 * Then the same request sampled at temperature 1, without speculation and with k = 4: where little
 * repeats, what proposals cost.
 *
 * <pre>SpeculativeDecode MODEL_DIR OUT_DIR [threads=all] [tokens=128] [context=128] [rounds=3]</pre>
 *
 * <p>{@code -Dquantization=q8_0} runs every engine with its weights quantized to Q8_0 at load;
 * {@code -Dbreakdown=true} times each pass's kernels; {@code -Dbatch=N} decodes N sequences
 * together (random prompts of their own) in the end-to-end runs.
 */
public final class SpeculativeDecode {
  private static final int[] PASS_KS = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  private static final int[] RUN_KS = {0, 2, 4, 8};
  private static final int PASSES = 12;
  /** {@code -Dbreakdown=true}: each pass's kernels timed (matmul by kind, attention, the rest). */
  private static final boolean BREAKDOWN = Boolean.getBoolean("breakdown");
  /** {@code -Dbatch=N}: N sequences decode together in the end-to-end runs (decode tok/s summed over them). */
  private static final int BATCH = Integer.getInteger("batch", 1);
  /**
   * {@code -Dconstraint=array}: the timed requests' output constrained to a JSON array of at least
   * {@code tokens ÷ 3} integers 0..99, {@code -Dconstraint=words}: to at least {@code tokens ÷ 3}
   * lowercase words and a full stop ({@code [a-z]+( [a-z]+){n,}\.}); each ends where the model
   * closes it or the budget makes the masker close it; unset: free.
   */
  private static final String CONSTRAINT = System.getProperty("constraint", "");

  private SpeculativeDecode() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: SpeculativeDecode MODEL_DIR OUT_DIR [threads=all] [tokens=128] [context=128] [rounds=3]");
      System.exit(2);
    }
    Path dir = Path.of(args[0]);
    Path out = Path.of(args[1]);
    int threads = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
    int tokens = args.length > 3 ? Integer.parseInt(args[3]) : 128;
    int context = args.length > 4 ? Integer.parseInt(args[4]) : 128;
    int rounds = args.length > 5 ? Integer.parseInt(args[5]) : 3;
    DType quantization = DType.fromQuantizationName(System.getProperty("quantization", "none"));
    Files.createDirectories(out);
    String model = dir.getFileName() + (quantization == null ? "" : " (" + quantization.shortName() + ")");

    double[] passMs = passCosts(dir, quantization, threads, context);
    System.out.printf(Locale.ROOT, "%n%s, context %d, %d threads: one pass verifying k proposed tokens%n", model, context, threads);
    System.out.println("| k | pass (ms, median of " + PASSES + ") | ÷ plain step (tokens a pass must yield to break even) |");
    System.out.println("|---|---|---|");
    for (int i = 0; i < PASS_KS.length; i++) {
      System.out.printf(Locale.ROOT, "| %d | %.1f | %.2f |%n", PASS_KS[i], passMs[i], passMs[i] / passMs[0]);
    }

    double[][] rates = new double[RUN_KS.length][rounds];
    Run[] last = new Run[RUN_KS.length];
    for (int round = 0; round < rounds; round++) {
      for (int j = 0; j < RUN_KS.length; j++) {
        int slot = (j + round) % RUN_KS.length; // rotate the order round by round
        Run run = run(dir, quantization, threads, RUN_KS[slot], tokens, context, SamplingParams.greedy());
        rates[slot][round] = run.tokensPerSecond();
        last[slot] = run;
        System.out.printf(Locale.ROOT, "round %d, k=%d: %.2f tok/s, drafted %d, kept %d, %.2f tokens a step%n",
            round + 1, RUN_KS[slot], run.tokensPerSecond(), run.counts().drafted(), run.counts().accepted(), run.tokensPerStep());
      }
    }
    System.out.printf(Locale.ROOT, "%n%s, %d tokens after a %d-token prompt, greedy, %d rounds, batch %d%s%n", model, tokens, context, rounds, BATCH,
        CONSTRAINT.isEmpty() ? "" : ", output constrained (" + CONSTRAINT + "): " + constraint(tokens).spec());
    System.out.println("| k | decode tok/s (median) | ÷ without | proposed, kept (last round) | tokens a step | pass cost ÷ plain | same tokens |");
    System.out.println("|---|---|---|---|---|---|---|");
    double base = median(rates[0]);
    double[] speedups = new double[RUN_KS.length];
    for (int j = 0; j < RUN_KS.length; j++) {
      Run r = last[j];
      speedups[j] = median(rates[j]) / base;
      int passIndex = Arrays.binarySearch(PASS_KS, RUN_KS[j]);
      System.out.printf(Locale.ROOT, "| %s | %.2f | %.2f× | %d, %d | %.2f | %.2f | %s |%n",
          RUN_KS[j] == 0 ? "off" : Integer.toString(RUN_KS[j]), median(rates[j]), speedups[j], r.counts().drafted(),
          r.counts().accepted(), r.tokensPerStep(), passMs[passIndex] / passMs[0], Arrays.equals(r.tokens(), last[0].tokens()) ? "yes" : "NO");
    }
    chart(out.resolve("speculative-decode.png"), model, passMs, speedups, last);

    // Sampled at temperature 1: the model's output rarely repeats, so proposals are few and mostly
    // fail; what speculation costs there (the tokens differ: the draws consume the generator differently).
    SamplingParams sampled = new SamplingParams(1f, 1f, 0, 0f, java.util.OptionalLong.of(7), 0f, 0f, 1f, -1);
    double[][] sampledRates = new double[2][rounds];
    Run[] sampledRuns = new Run[2];
    for (int round = 0; round < rounds; round++) {
      for (int j = 0; j < 2; j++) {
        int slot = (j + round) % 2;
        sampledRuns[slot] = run(dir, quantization, threads, slot == 0 ? 0 : 4, tokens, context, sampled);
        sampledRates[slot][round] = sampledRuns[slot].tokensPerSecond();
      }
    }
    System.out.printf(Locale.ROOT, "%nsampled (temperature 1, seed 7), %d rounds: off %.2f tok/s, k=4 %.2f tok/s (%.2f×), proposed %d, kept %d%n",
        rounds, median(sampledRates[0]), median(sampledRates[1]), median(sampledRates[1]) / median(sampledRates[0]),
        sampledRuns[1].counts().drafted(), sampledRuns[1].counts().accepted());
  }

  /** Median milliseconds of a pass verifying k proposals (k + 1 tokens, every position's logits), for each k. */
  private static double[] passCosts(Path dir, DType quantization, int threads, int context) {
    ModelConfig config = ModelConfig.read(dir);
    int blockSize = 16;
    int blocks = (context + 16 + blockSize) / blockSize + 1;
    try (ModelWeights weights = ModelWeights.load(dir, config, quantization);
        ComputeBackend backend = BREAKDOWN ? new TimedBackend(ComputeBackends.create("cpu", threads)) : ComputeBackends.create("cpu", threads);
        PagedKvCache cache = new PagedKvCache(config, blocks, blockSize, config.torchDtype())) {
      Transformer transformer = new Transformer(weights, backend, blockSize, config.maxPositionEmbeddings());
      int[] table = new int[blocks];
      Arrays.setAll(table, i -> i);
      int[] ids = new SplittableRandom(1).ints(context + 16, 0, Math.min(100_000, config.vocabSize())).toArray();
      transformer.forward(List.of(new Transformer.Slice(ids, 0, context, 0, table, true)), cache);
      double[] ms = new double[PASS_KS.length];
      for (int i = 0; i < PASS_KS.length; i++) {
        int count = PASS_KS[i] + 1;
        List<Transformer.Slice> slice = List.of(count == 1
            ? new Transformer.Slice(ids, context, 1, context, table, true)
            : new Transformer.Slice(ids, context, count, context, table, false, context + count + 1));
        Transformer.PositionLogits keep = count == 1 ? null : (s, position, logits) -> {};
        double[] times = new double[PASSES];
        for (int rep = -3; rep < PASSES; rep++) {
          if (rep == 0 && backend instanceof TimedBackend timed) {
            timed.start();
          }
          long start = System.nanoTime();
          transformer.forward(slice, cache, null, keep);
          if (rep >= 0) {
            times[rep] = (System.nanoTime() - start) / 1e6;
          }
        }
        ms[i] = median(times);
        if (backend instanceof TimedBackend timed) {
          timed.stop();
          long total = (long) (Arrays.stream(times).sum() * 1e6);
          for (String line : timed.report(total, PASSES)) {
            System.out.println("breakdown k=" + PASS_KS[i] + " " + line);
          }
        }
        System.out.printf(Locale.ROOT, "pass k=%d: %.1f ms%n", PASS_KS[i], ms[i]);
      }
      return ms;
    }
  }

  record Run(double tokensPerSecond, SpeculationCounts counts, double tokensPerStep, int[] tokens) {}

  private static Run run(Path dir, DType quantization, int threads, int k, int tokens, int context, SamplingParams sampling) {
    SpeculativeConfig speculation = k == 0 ? SpeculativeConfig.OFF : new SpeculativeConfig(k, 4, 2);
    BuiltinConfig config = BuiltinConfig.of(dir).withCompute("cpu", threads).withKvCacheBytes(256L << 20)
        .withBatching(BATCH, 4096, true).withQuantization(quantization).withSpeculative(speculation);
    try (BuiltinEngine engine = BuiltinEngine.open(config)) {
      int vocab = Math.min(100_000, engine.modelConfig().vocabSize());
      int[][] prompts = new int[BATCH][];
      for (int b = 0; b < BATCH; b++) {
        prompts[b] = new SplittableRandom(7 + b).ints(context, 0, vocab).toArray();
        engine.add(new EngineRequest("warm-up-" + b, prompts[b], SamplingParams.greedy(), new StopConditions(8, new int[0], true)));
      }
      while (engine.hasWork()) {
        engine.step();
      }
      StructuredOutput constraint = constraint(tokens);
      for (int b = 0; b < BATCH; b++) {
        engine.add(constraint == null
            ? new EngineRequest("timed-" + b, prompts[b], sampling, new StopConditions(tokens, new int[0], true))
            : new EngineRequest("timed-" + b, prompts[b], sampling, new StopConditions(tokens, new int[0], false), constraint, tokens));
      }
      SpeculationCounts before = engine.speculationCounts();
      java.util.Map<String, List<Integer>> out = new java.util.TreeMap<>();
      long first = 0;
      int laterOutputs = 0;
      while (engine.hasWork()) {
        for (RequestOutput o : engine.step()) {
          List<Integer> seq = out.computeIfAbsent(o.requestId(), id -> new ArrayList<>());
          if (first == 0) {
            first = System.nanoTime();
          }
          if (!seq.isEmpty()) {
            laterOutputs++;
          }
          for (int t : o.newTokens()) {
            seq.add(t);
          }
        }
      }
      double seconds = (System.nanoTime() - first) / 1e9;
      SpeculationCounts after = engine.speculationCounts();
      SpeculationCounts counts = new SpeculationCounts(after.drafted() - before.drafted(), after.accepted() - before.accepted());
      int[] all = out.values().stream().flatMap(List::stream).mapToInt(Integer::intValue).toArray();
      int later = all.length - BATCH; // after each sequence's first token
      return new Run(later / seconds, counts, later / (double) laterOutputs, all);
    }
  }

  private static StructuredOutput constraint(int tokens) {
    return switch (CONSTRAINT) {
      case "" -> null;
      case "array" -> StructuredOutput.jsonSchema("{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":99},"
          + "\"minItems\":" + tokens / 3 + "}");
      case "words" -> StructuredOutput.regex("[a-z]+( [a-z]+){" + tokens / 3 + ",}\\.");
      default -> throw new IllegalArgumentException("-Dconstraint: array, words or unset, not " + CONSTRAINT);
    };
  }

  private static double median(double[] values) {
    double[] v = values.clone();
    Arrays.sort(v);
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static void chart(Path png, String model, double[] passMs, double[] speedups, Run[] runs) throws java.io.IOException {
    CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
        .title("Speculative decoding on " + model + " (batch 1)")
        .xAxisTitle("proposed tokens per pass (k)").yAxisTitle("× one plain decode step").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
    chart.getStyler().setYAxisMin(0.0);
    List<String> x = new ArrayList<>();
    List<Double> cost = new ArrayList<>();
    List<Double> speedup = new ArrayList<>();
    List<Double> yield = new ArrayList<>();
    for (int i = 0; i < PASS_KS.length; i++) {
      x.add(Integer.toString(PASS_KS[i]));
      cost.add(passMs[i] / passMs[0]);
      int j = Arrays.binarySearch(RUN_KS, PASS_KS[i]);
      speedup.add(j >= 0 ? speedups[j] : 0.0);
      yield.add(j >= 0 ? runs[j].tokensPerStep() : 0.0);
    }
    chart.addSeries("pass time (tokens a pass must yield to break even)", x, cost);
    chart.addSeries("tokens a pass yielded (this model's output)", x, yield);
    chart.addSeries("decode speed-up, end to end", x, speedup);
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
  }
}
