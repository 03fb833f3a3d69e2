package dev.tandem.bench;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.encoder.EncoderEngine;
import dev.tandem.engine.modeltools.EncoderGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The encoder engine's embedding rate on a model of a real encoder's shape (random weights):
 * {@code EncoderThroughput DIR SHAPE TOKENS INPUTS THREADS [BATCH]} writes the model to DIR if it is not
 * there (SHAPE {@code minilm}: all-MiniLM-L6-v2's 384 wide, 6 layers, 12 heads, MLP 1,536;
 * {@code bge-base}: bge-base-en-v1.5's 768, 12, 12, 3,072; 512 positions), then embeds INPUTS
 * inputs of TOKENS tokens, BATCH (default 1) a step, after two warm-up rounds, printing one line:
 * inputs a second, tokens a second, ms an input. Run by {@code benchmarks/scripts/encoder_embed.sh} beside
 * PyTorch on the same weights.
 */
public final class EncoderThroughput {
  private EncoderThroughput() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    String shape = args[1];
    int tokens = Integer.parseInt(args[2]);
    int inputs = Integer.parseInt(args[3]);
    int threads = Integer.parseInt(args[4]);
    int batch = args.length > 5 ? Integer.parseInt(args[5]) : 1;
    if (!Files.exists(dir.resolve("model.safetensors"))) {
      switch (shape) {
        case "minilm" -> EncoderGenerator.write(dir, 1, "bert", 384, 6, 12, 1536, 512, "pooling_mode_mean_tokens");
        case "bge-base" -> EncoderGenerator.write(dir, 2, "bert", 768, 12, 12, 3072, 512, "pooling_mode_cls_token");
        default -> throw new IllegalArgumentException("shape: minilm or bge-base, not " + shape);
      }
    }
    SplittableRandom random = new SplittableRandom(3);
    try (EncoderEngine engine = EncoderEngine.open(dir, "bench", "cpu", threads, batch, 1 << 20)) {
      for (int round = 0; round < 3; round++) {
        int n = round < 2 ? Math.max(2, inputs / 4) : inputs;
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
          int[] ids = new int[tokens];
          ids[0] = 2;
          for (int t = 1; t < tokens - 1; t++) {
            ids[t] = 10 + random.nextInt(90);
          }
          ids[tokens - 1] = 3;
          engine.add(new EngineRequest("r" + i, ids, SamplingParams.greedy(), StopConditions.maxTokens(1), null, 1, null, 0, 0, null, true));
          if ((i + 1) % batch == 0 || i == n - 1) {
            while (engine.hasWork()) {
              engine.step();
            }
          }
        }
        double s = (System.nanoTime() - start) / 1e9;
        if (round == 2) {
          System.out.printf(Locale.ROOT, "tandem %s tokens=%d threads=%d%s: %.2f inputs/s, %.0f tokens/s, %.1f ms an input%n", shape, tokens,
              threads, batch > 1 ? " batch=" + batch : "", n / s, n * (double) tokens / s, 1000 * s / n);
        }
      }
    }
  }
}
