package dev.tandem.bench;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.modeltools.LoraGenerator;
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
 * What serving a LoRA adapter costs the built-in engine, against its limit in the same run.
 *
 * <p>One engine holds the base model and adapters on every projection (f32, as the engine keeps
 * them) of ranks {@code ranks} plus three more of rank 16. In rounds that rotate the order:
 * <ul>
 *   <li><b>prefill</b>: a {@code prompt}-token prompt to its first token, base model against each
 *       rank. Limit: prefill is compute: base FLOPs ÷ (base + the adapter's {@code 2·r·(in + out)}
 *       per projection and token);
 *   <li><b>decode, batch 1</b>: {@code tokens} tokens after a 16-token prompt. Limit: decode reads
 *       every weight once a step: base bytes ÷ (base + the adapter's {@code 4·r·(in + out)} per
 *       projection);
 *   <li><b>decode, batch 4</b>: four sequences on the base model, on one rank-16 adapter, and each
 *       on its own rank-16 adapter (four adapters' weights read every step; the limit counts them).
 * </ul>
 * Each rate is reported ÷ the base model's in the same round, beside the limit's ratio.
 *
 * <pre>LoraOverhead MODEL_DIR OUT_DIR [threads=all] [tokens=64] [prompt=512] [rounds=3] [ranks=8,16,64]</pre>
 */
public final class LoraOverhead {
  private static final int MULTI = 4;

  private LoraOverhead() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: LoraOverhead MODEL_DIR OUT_DIR [threads=all] [tokens=64] [prompt=512] [rounds=3] [ranks=8,16,64]");
      System.exit(2);
    }
    Path dir = Path.of(args[0]);
    Path out = Path.of(args[1]);
    int threads = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
    int tokens = args.length > 3 ? Integer.parseInt(args[3]) : 64;
    int prompt = args.length > 4 ? Integer.parseInt(args[4]) : 512;
    int rounds = args.length > 5 ? Integer.parseInt(args[5]) : 3;
    int[] ranks = Arrays.stream((args.length > 6 ? args[6] : "8,16,64").split(",")).mapToInt(Integer::parseInt).toArray();
    Files.createDirectories(out);
    ModelConfig config = ModelConfig.read(dir);

    // The adapters: one per rank, then MULTI - 1 more of rank 16 (distinct seeds) for the mixed batch.
    List<LoraAdapter.Source> sources = new ArrayList<>();
    for (int r : ranks) {
      sources.add(adapter(dir, out, "r" + r, r, r));
    }
    if (Arrays.stream(ranks).noneMatch(r -> r == 16)) {
      sources.add(adapter(dir, out, "r16", 16, 16));
    }
    for (int i = 1; i < MULTI; i++) {
      sources.add(adapter(dir, out, "r16-" + i, 16, 100 + i));
    }
    int maxRank = Math.max(16, Arrays.stream(ranks).max().orElse(16));
    BuiltinConfig engineConfig = BuiltinConfig.of(dir).withCompute("cpu", threads).withKvCacheBytes(512L << 20)
        .withBatching(MULTI, 4096, true).withLora(sources, maxRank);
    String model = dir.getFileName().toString();
    long baseBytes = 0;
    long baseParams = 0;
    try (BuiltinEngine engine = BuiltinEngine.open(engineConfig)) {
      baseBytes = engine.bytesReadPerToken();
      baseParams = engine.matrixParameters();
      int vocab = Math.min(100_000, config.vocabSize());
      run(engine, List.of(random(prompt, 1, vocab)), new String[] {null}, 8); // warm-up

      String[] prefillNames = new String[ranks.length + 1];
      for (int i = 0; i < ranks.length; i++) {
        prefillNames[i + 1] = "r" + ranks[i];
      }
      double[][] prefill = new double[prefillNames.length][rounds]; // tokens/s
      double[][] decode = new double[prefillNames.length][rounds];
      String[][] batches = {{null, null, null, null}, {"r16", "r16", "r16", "r16"}, {"r16", "r16-1", "r16-2", "r16-3"}};
      double[][] batched = new double[batches.length][rounds];
      int salt = 10;
      for (int round = 0; round < rounds; round++) {
        for (int j = 0; j < prefillNames.length; j++) {
          int slot = (j + round) % prefillNames.length;
          long start = System.nanoTime();
          run(engine, List.of(random(prompt, salt++, vocab)), new String[] {prefillNames[slot]}, 1);
          prefill[slot][round] = prompt / ((System.nanoTime() - start) / 1e9);
          decode[slot][round] = run(engine, List.of(random(16, salt++, vocab)), new String[] {prefillNames[slot]}, tokens);
          System.out.printf(Locale.ROOT, "round %d, %s: prefill %.0f tok/s, decode %.2f tok/s%n", round + 1,
              prefillNames[slot] == null ? "base" : prefillNames[slot], prefill[slot][round], decode[slot][round]);
        }
        for (int j = 0; j < batches.length; j++) {
          int slot = (j + round) % batches.length;
          List<int[]> prompts = new ArrayList<>();
          for (int b = 0; b < MULTI; b++) {
            prompts.add(random(16, salt++, vocab));
          }
          batched[slot][round] = run(engine, prompts, batches[slot], tokens);
          System.out.printf(Locale.ROOT, "round %d, batch of %d on %s: %.2f tok/s%n", round + 1, MULTI, Arrays.toString(batches[slot]),
              batched[slot][round]);
        }
      }

      System.out.printf(Locale.ROOT, "%n%s, %d threads, %d rounds (medians; each ratio against the base model's median)%n", model, threads, rounds);
      System.out.println("| adapter | prefill of " + prompt + " tokens (tok/s) | ÷ base | limit (compute) | decode, batch 1 (tok/s) | ÷ base | limit (bytes) |");
      System.out.println("|---|---|---|---|---|---|---|");
      double basePrefill = median(prefill[0]);
      double baseDecode = median(decode[0]);
      double[] prefillRatio = new double[prefillNames.length];
      double[] prefillLimit = new double[prefillNames.length];
      double[] decodeRatio = new double[prefillNames.length];
      double[] decodeLimit = new double[prefillNames.length];
      for (int j = 0; j < prefillNames.length; j++) {
        int rank = j == 0 ? 0 : ranks[j - 1];
        long extra = adapterWeights(config, rank);
        prefillRatio[j] = median(prefill[j]) / basePrefill;
        prefillLimit[j] = baseParams / (double) (baseParams + extra);
        decodeRatio[j] = median(decode[j]) / baseDecode;
        decodeLimit[j] = baseBytes / (double) (baseBytes + 4 * extra);
        System.out.printf(Locale.ROOT, "| %s | %.0f | %.3f | %.3f | %.2f | %.3f | %.3f |%n", j == 0 ? "none" : "rank " + rank,
            median(prefill[j]), prefillRatio[j], prefillLimit[j], median(decode[j]), decodeRatio[j], decodeLimit[j]);
      }
      System.out.printf(Locale.ROOT, "%n| batch of %d | decode (tok/s, all sequences) | ÷ base | limit (bytes) |%n", MULTI);
      System.out.println("|---|---|---|---|");
      String[] labels = {"base model", "one rank-16 adapter", MULTI + " rank-16 adapters, one each"};
      long r16 = adapterWeights(config, 16);
      long[] extra = {0, r16, MULTI * r16};
      for (int j = 0; j < batches.length; j++) {
        System.out.printf(Locale.ROOT, "| %s | %.2f | %.3f | %.3f |%n", labels[j], median(batched[j]), median(batched[j]) / median(batched[0]),
            baseBytes / (double) (baseBytes + 4 * extra[j]));
      }
      chart(out.resolve("lora-overhead.png"), model, prefillNames, prefillRatio, prefillLimit, decodeRatio, decodeLimit);
    }
  }

  /** Writes a rank-{@code rank} adapter on every projection (f32) under {@code out/adapters/name}, once. */
  static LoraAdapter.Source adapter(Path model, Path out, String name, int rank, long seed) throws java.io.IOException {
    Path dir = out.resolve("adapters").resolve(name);
    if (!Files.exists(dir.resolve("adapter_config.json"))) {
      LoraGenerator.write(model, dir, rank, 2 * rank, false, LoraGenerator.ALL_TARGETS, seed, DType.F32);
    }
    return new LoraAdapter.Source(name, dir);
  }

  /** Weights of a rank-{@code rank} adapter on every projection of every layer: r·(in + out) each. */
  static long adapterWeights(ModelConfig c, int rank) {
    long perLayer = 0;
    for (LoraAdapter.Target t : LoraAdapter.Target.values()) {
      perLayer += t.inputs(c) + t.outputs(c);
    }
    return rank * perLayer * c.numLayers();
  }

  private static int[] random(int length, int seed, int vocab) {
    return new SplittableRandom(seed).ints(length, 0, vocab).toArray();
  }

  /**
   * Runs {@code prompts} (each on {@code loras[i]}, null the base model) for {@code tokens} tokens
   * each; returns decode tokens/s from the first output to the last (0 when {@code tokens} ≤ 1).
   */
  private static double run(BuiltinEngine engine, List<int[]> prompts, String[] loras, int tokens) {
    for (int i = 0; i < prompts.size(); i++) {
      engine.add(new EngineRequest("r" + System.nanoTime() + "-" + i, prompts.get(i), SamplingParams.greedy(),
          new StopConditions(Math.max(1, tokens), new int[0], true), null, Math.max(1, tokens), loras[i]));
    }
    long first = 0;
    int later = 0;
    while (engine.hasWork()) {
      for (RequestOutput o : engine.step()) {
        if (first == 0) {
          first = System.nanoTime();
        } else {
          later += o.newTokens().length;
        }
      }
    }
    return tokens <= 1 ? 0 : later / ((System.nanoTime() - first) / 1e9);
  }

  private static double median(double[] values) {
    double[] v = values.clone();
    Arrays.sort(v);
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static void chart(Path png, String model, String[] names, double[] prefill, double[] prefillLimit, double[] decode,
      double[] decodeLimit) throws java.io.IOException {
    CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
        .title("LoRA adapters on " + model + ": speed ÷ the base model's, beside the limit")
        .xAxisTitle("adapter rank").yAxisTitle("÷ base model").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideSW);
    chart.getStyler().setYAxisMin(0.0);
    chart.getStyler().setYAxisMax(1.1);
    List<String> x = new ArrayList<>();
    for (int j = 1; j < names.length; j++) {
      x.add(names[j]);
    }
    chart.addSeries("prefill", x, tail(prefill));
    chart.addSeries("prefill limit (FLOPs)", x, tail(prefillLimit));
    chart.addSeries("decode, batch 1", x, tail(decode));
    chart.addSeries("decode limit (bytes)", x, tail(decodeLimit));
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
  }

  private static List<Double> tail(double[] v) {
    List<Double> out = new ArrayList<>();
    for (int j = 1; j < v.length; j++) {
      out.add(v[j]);
    }
    return out;
  }
}
