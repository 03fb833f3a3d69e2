package dev.tandem.bench;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.compute.ComputeBackends;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import java.nio.file.Path;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Where a whole-prompt prefill's time goes on the CPU backend: each kernel timed ({@link
 * TimedBackend}) over one prefill of the given length, after two untimed ones (JIT warm-up). In
 * the report, "ms/token" is milliseconds of that one prefill and the matmul GB/s columns do not
 * apply (a prefill reads each weight once for all its tokens).
 *
 * <pre>java ... [-Dquantization=q8_0] dev.tandem.bench.PrefillBreakdown MODEL_DIR PROMPT_TOKENS [threads]</pre>
 */
public final class PrefillBreakdown {
  private PrefillBreakdown() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    int prompt = Integer.parseInt(args[1]);
    int threads = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
    BuiltinConfig config = BuiltinConfig.of(dir).withCompute("cpu", threads).withKvCacheBytes(2L << 30)
        .withBatching(1, prompt, false).withMaxContextLength(prompt + 8);
    TimedBackend timed = new TimedBackend(ComputeBackends.create("cpu", threads));
    DType quantization = DType.fromQuantizationName(System.getProperty("quantization", "none"));
    try (BuiltinEngine engine = new BuiltinEngine(ModelWeights.load(dir, ModelConfig.read(dir), quantization), timed, config)) {
      SplittableRandom random = new SplittableRandom(prompt);
      for (int rep = 0; rep < 3; rep++) {
        boolean measured = rep == 2;
        if (measured) {
          timed.start();
        }
        // Random ids below 100,000: no prefix is shared, so nothing hits the cache.
        engine.add(new EngineRequest("p" + rep, random.ints(prompt, 0, 100_000).toArray(), SamplingParams.greedy(),
            new StopConditions(1, new int[0], true)));
        long start = System.nanoTime();
        while (engine.hasWork()) {
          engine.step();
        }
        long nanos = System.nanoTime() - start;
        if (measured) {
          timed.stop();
          System.out.printf(Locale.ROOT, "prefill of %d tokens, %d threads: %.1f ms, %.0f tokens/s (the timed pass)%n",
              prompt, threads, nanos / 1e6, prompt / (nanos / 1e9));
          for (String line : timed.report(nanos, 1)) {
            System.out.println(line);
          }
        }
      }
    }
  }
}
