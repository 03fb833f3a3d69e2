package dev.tandem.comparison;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.safetensors.prompt.PromptContext;
import java.io.File;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * Jlama 0.8.4 on the same safetensors directory (f32 working memory, bf16 weights as stored):
 * batch-1 decode tokens/s and prefill tokens/s. Jlama's generate() runs one sequence per call, so
 * there is no batched decode to compare.
 *
 * <pre>java ... dev.tandem.comparison.JlamaThroughput MODEL_DIR prompts</pre>
 * Jlama sizes its own thread pool from the machine's cores.
 */
public final class JlamaThroughput {
  private JlamaThroughput() {}

  public static void main(String[] args) {
    AbstractModel model = ModelSupport.loadModel(new File(args[0]), DType.F32, DType.BF16);
    int[] prompts = java.util.Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray();
    System.out.println("Jlama 0.8.4 on " + args[0]);
    long[] times = new long[64];
    String text = "";
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
      int[] n = {0};
      var r = model.generate(UUID.randomUUID(), PromptContext.of(LlamaCppThroughput.prompt(128)), 0f, 128 + times.length + 1,
          (s, f) -> {
            if (n[0] < times.length) {
              times[n[0]++] = System.nanoTime();
            }
          });
      text = r.responseText;
      best = Math.max(best, TokenTimes.steadyDecodeRate(List.of(java.util.Arrays.copyOf(times, n[0]))));
    }
    System.out.println("greedy text after a 128-token prompt: " + text.substring(0, Math.min(text.length(), 60)).replace("\n", "\\n"));
    System.out.printf(Locale.ROOT, "decode batch  1: %8.1f tokens/s%n", best);
    for (int p : prompts) {
      double bestPrefill = 0;
      for (int rep = 0; rep < 2; rep++) {
        long start = System.nanoTime();
        model.generate(UUID.randomUUID(), PromptContext.of(LlamaCppThroughput.prompt(p)), 0f, p + 2, (s, f) -> {});
        bestPrefill = Math.max(bestPrefill, p / ((System.nanoTime() - start) / 1e9));
      }
      System.out.printf(Locale.ROOT, "prefill %5d tokens: %8.1f tokens/s%n", p, bestPrefill);
    }
    System.exit(0);
  }
}
