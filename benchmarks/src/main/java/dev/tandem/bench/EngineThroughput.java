package dev.tandem.bench;

import dev.tandem.engine.EngineRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import java.nio.file.Path;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The built-in engine's speed on a model directory, beside the machine's limits measured in the
 * same run: decode tokens/s at several batch sizes (batch 1 against memory bandwidth ÷ weight
 * bytes read per token) and prefill tokens/s at several prompt lengths (against peak FLOP/s).
 *
 * <pre>java ... [-Dquantization=q8_0] dev.tandem.bench.EngineThroughput MODEL_DIR [threads] [batches=1,8,32] [prompts=512,2048]</pre>
 */
public final class EngineThroughput {
  private EngineThroughput() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : Runtime.getRuntime().availableProcessors();
    int[] batches = ints(args.length > 2 ? args[2] : "1,8,32");
    int[] prompts = ints(args.length > 3 ? args[3] : "512,2048");

    ModelConfig config = ModelConfig.read(dir);
    BuiltinConfig base = BuiltinConfig.of(dir).withCompute("cpu", threads).withKvCacheBytes(2L << 30)
        .withQuantization(DType.fromQuantizationName(System.getProperty("quantization", "none")));
    int maxBatch = java.util.Arrays.stream(batches).max().orElse(1);
    BuiltinEngine engine = BuiltinEngine.open(base.withBatching(maxBatch, 4096, true));
    long weightBytes = engine.bytesReadPerToken();
    long params = engine.matrixParameters();
    double bandwidth = MachineLimits.readBandwidth(threads, 1L << 30, 5);
    double flops = MachineLimits.peakFlops(threads, 3);
    System.out.printf(Locale.ROOT, "model %s: %s, %d layers, hidden %d, %.1fM matmul parameters, %.0f MB read per decoded token%n",
        dir.getFileName(), config.architecture().hfName, config.numLayers(), config.hiddenSize(), params / 1e6, weightBytes / 1e6);
    System.out.printf(Locale.ROOT, "machine (%d threads): read bandwidth %.1f GB/s, peak f32 FMA %.1f GFLOP/s%n",
        threads, bandwidth / 1e9, flops / 1e9);
    double limit = bandwidth / weightBytes;
    System.out.printf(Locale.ROOT, "batch-1 decode limit (bandwidth / bytes per token): %.1f tokens/s%n", limit);

    for (int batch : batches) {
      double tps = decode(engine, batch, 128, 32);
      String vs = batch == 1 ? String.format(Locale.ROOT, "  = %.0f%% of the bandwidth limit", 100 * tps / limit) : "";
      System.out.printf(Locale.ROOT, "decode batch %2d: %8.1f tokens/s%s%n", batch, tps, vs);
    }
    engine.close();
    for (int prompt : prompts) {
      double tps = prefill(base.withBatching(1, prompt, false).withMaxContextLength(prompt + 8), prompt);
      // The layers' matmul FLOPs per token, the LM head's once per prompt (a prefill computes the
      // logits of its last position only), and attention's (QK and AV over the causal half, on
      // average). Runs before 2026-12-02 counted the LM head for every prompt token.
      long lmHead = (long) config.vocabSize() * config.hiddenSize();
      double perToken = 2.0 * (params - lmHead) + 2.0 * lmHead / prompt
          + 2.0 * 2 * config.numLayers() * config.qDim() * (prompt / 2.0);
      System.out.printf(Locale.ROOT, "prefill %5d tokens: %8.1f tokens/s = %.1f GFLOP/s = %.0f%% of peak%n",
          prompt, tps, tps * perToken / 1e9, 100 * tps * perToken / flops);
    }
  }

  /** Tokens/s over decode-only steps of {@code batch} sequences (prefill excluded); the engine ends idle. */
  static double decode(BuiltinEngine engine, int batch, int prompt, int steps) {
    return decode(engine, batch, prompt, steps, () -> {}, () -> {});
  }

  /** As above, running {@code beforeTiming} just before the timed steps and {@code afterTiming} right after them. */
  static double decode(
      BuiltinEngine engine, int batch, int prompt, int steps, Runnable beforeTiming, Runnable afterTiming) {
    SplittableRandom random = new SplittableRandom(batch);
    for (int i = 0; i < batch; i++) {
      engine.add(request("decode-" + batch + "-" + i, random, prompt, steps + 8));
    }
    // Prefill everything, then a few warm-up decode steps.
    while (engine.load().queuedPrefillTokens() > 0 || engine.load().waitingRequests() > 0) {
      engine.step();
    }
    for (int i = 0; i < 3; i++) {
      engine.step();
    }
    beforeTiming.run();
    long start = System.nanoTime();
    long tokens = 0;
    for (int i = 0; i < steps; i++) {
      tokens += engine.step().size();
    }
    double rate = tokens / ((System.nanoTime() - start) / 1e9);
    afterTiming.run();
    while (engine.hasWork()) {
      engine.step();
    }
    return rate;
  }

  /**
   * Prompt tokens/s of one whole-prompt prefill step (best of two, after an untimed one of the same
   * length: the wide micro-kernels run boxed until C2 has compiled them, which a short warm-up does
   * not wait for).
   */
  static double prefill(BuiltinConfig config, int prompt) {
    try (BuiltinEngine engine = BuiltinEngine.open(config)) {
      SplittableRandom random = new SplittableRandom(prompt);
      engine.add(request("warm-up", random, prompt, 1));
      while (engine.hasWork()) {
        engine.step();
      }
      double best = 0;
      for (int rep = 0; rep < 2; rep++) {
        engine.add(request("p" + rep, random, prompt, 1));
        long start = System.nanoTime();
        while (engine.hasWork()) {
          engine.step();
        }
        best = Math.max(best, prompt / ((System.nanoTime() - start) / 1e9));
      }
      return best;
    }
  }

  private static EngineRequest request(String id, SplittableRandom random, int prompt, int maxTokens) {
    // Random ids below 100,000 (regular tokens): no prefix is shared, so nothing hits the cache.
    int[] tokens = random.ints(prompt, 0, 100_000).toArray();
    return new EngineRequest(id, tokens, SamplingParams.greedy(), new StopConditions(maxTokens, new int[0], true));
  }

  private static int[] ints(String csv) {
    return java.util.Arrays.stream(csv.split(",")).mapToInt(Integer::parseInt).toArray();
  }
}
