package dev.tandem.bench;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * What sampling costs the built-in engine's decode: tokens/s at a batch size with greedy argmax
 * (the anchor: no sampling work) beside temperature sampling alone, top-p 0.9, and Qwen3's
 * generation defaults (temperature 0.6, top-k 20, top-p 0.95, which every request to a Qwen3
 * model gets unless it sets its own), rounds interleaved, each row as a ratio to greedy in the same
 * round; and greedy with {@code top_logprobs: 20} (each token's log-probability and its 20
 * likeliest alternatives, as agents and evaluation harnesses ask). The sampler runs on the engine
 * thread after the forward pass, so what it spends per sequence adds to every step.
 *
 * <pre>java ... dev.tandem.bench.SamplingCost MODEL_DIR OUT_DIR [threads] [batch=8] [rounds=5]</pre>
 */
public final class SamplingCost {
  private SamplingCost() {}

  static final Map<String, SamplingParams> ROWS = new LinkedHashMap<>();

  static {
    ROWS.put("greedy", SamplingParams.greedy());
    ROWS.put("temperature 1", sampled(1f, SamplingParams.NO_TOP_P, SamplingParams.NO_TOP_K));
    ROWS.put("top-p 0.9", sampled(1f, 0.9f, SamplingParams.NO_TOP_K));
    ROWS.put("Qwen3 defaults", sampled(0.6f, 0.95f, 20)); // temperature 0.6, top-k 20, top-p 0.95
    ROWS.put("greedy, top_logprobs 20", SamplingParams.greedy().withLogprobs(20));
  }

  private static SamplingParams sampled(float temperature, float topP, int topK) {
    return new SamplingParams(temperature, topP, topK, 0f, OptionalLong.of(7), 0f, 0f, SamplingParams.NO_REPETITION_PENALTY,
        SamplingParams.NO_LOGPROBS);
  }

  public static void main(String[] args) throws Exception {
    Path model = Path.of(args[0]);
    Path out = Path.of(args[1]);
    int threads = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
    int batch = args.length > 3 ? Integer.parseInt(args[3]) : 8;
    int rounds = args.length > 4 ? Integer.parseInt(args[4]) : 5;
    java.nio.file.Files.createDirectories(out);
    BuiltinConfig config = BuiltinConfig.of(model).withCompute("cpu", threads).withKvCacheBytes(1L << 30).withBatching(batch, 2048, true);
    Map<String, List<Double>> speed = new LinkedHashMap<>();
    Map<String, List<Double>> ratio = new LinkedHashMap<>();
    try (BuiltinEngine engine = BuiltinEngine.open(config)) {
      System.out.printf(Locale.ROOT, "decode at batch %d, 96 tokens each (%s, %d threads, vocabulary %d), %d rounds; Qwen3 defaults: temperature 0.6, top-k 20, top-p 0.95%n",
          batch, model.getFileName(), threads, engine.info().vocabSize(), rounds);
      for (SamplingParams p : ROWS.values()) {
        decode(engine, p, batch, 0); // warm-up
      }
      for (int round = 1; round <= rounds; round++) {
        double greedy = 0;
        StringBuilder line = new StringBuilder("round " + round + ":");
        for (var row : ROWS.entrySet()) {
          double tps = decode(engine, row.getValue(), batch, round);
          greedy = row.getKey().equals("greedy") ? tps : greedy;
          speed.computeIfAbsent(row.getKey(), k -> new ArrayList<>()).add(tps);
          ratio.computeIfAbsent(row.getKey(), k -> new ArrayList<>()).add(tps / greedy);
          line.append(String.format(Locale.ROOT, " %s %.1f tokens/s (%.3f×);", row.getKey(), tps, tps / greedy));
        }
        System.out.println(line);
      }
    }
    System.out.println("| sampling | tokens/s (median) | ÷ greedy, same round (median) |");
    System.out.println("|---|---|---|");
    for (String k : ROWS.keySet()) {
      System.out.printf(Locale.ROOT, "| %s | %.1f | %.3f |%n", k, median(speed.get(k)), median(ratio.get(k)));
    }
    CategoryChart chart = new CategoryChartBuilder().width(1000).height(500)
        .title("Decode at batch " + batch + ": tokens/s with each sampling setting ÷ greedy in the same round (median)")
        .xAxisTitle("sampling").yAxisTitle("÷ greedy").build();
    chart.getStyler().setYAxisMin(0.0);
    chart.getStyler().setYAxisMax(1.1);
    List<String> x = new ArrayList<>(ROWS.keySet());
    chart.addSeries("tokens/s ÷ greedy", x, x.stream().map(k -> median(ratio.get(k))).toList());
    Path png = out.resolve("sampling-cost.png");
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    System.out.println("chart: " + png);
  }

  /** Decode tokens/s of {@code batch} sequences of 96 tokens (prefill excluded). */
  private static double decode(BuiltinEngine engine, SamplingParams p, int batch, int round) {
    SplittableRandom random = new SplittableRandom(round);
    for (int i = 0; i < batch; i++) {
      int[] prompt = random.ints(64, 0, 100_000).toArray();
      engine.add(new EngineRequest("r" + round + "-" + i + "-" + p.hashCode(), prompt, p, new StopConditions(96, new int[0], true)));
    }
    while (engine.load().queuedPrefillTokens() > 0 || engine.load().waitingRequests() > 0) {
      engine.step();
    }
    long start = System.nanoTime();
    long tokens = 0;
    while (engine.hasWork()) {
      tokens += engine.step().size();
    }
    return tokens / ((System.nanoTime() - start) / 1e9);
  }

  private static double median(List<Double> v) {
    double[] s = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return s[s.length / 2];
  }
}
