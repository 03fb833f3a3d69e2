package dev.tandem.comparison;

import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.LlamaOutput;
import de.kherud.llama.ModelParameters;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;

/**
 * llama.cpp (the native library bundled in de.kherud:llama 4.2.0) on a GGUF file: decode tokens/s
 * with B concurrent streams (B server slots, continuous batching) and prefill tokens/s of one
 * prompt. Prompts are " hello" repeated, one token each with the Qwen3 tokenizer. Decode follows
 * a prompt of {@code decode-context} tokens (128 unless given): the depth its attention reads.
 *
 * <pre>java ... dev.tandem.comparison.LlamaCppThroughput MODEL.gguf threads batches prompts|none [decode-tokens=64] [decode-context=128]</pre>
 */
public final class LlamaCppThroughput {
  private LlamaCppThroughput() {}

  public static void main(String[] args) throws Exception {
    String gguf = args[0];
    int threads = Integer.parseInt(args[1]);
    int[] batches = ints(args[2]);
    int[] prompts = args[3].equals("none") ? new int[0] : ints(args[3]);
    int decodeTokens = args.length > 4 ? Integer.parseInt(args[4]) : 64;
    int decodeContext = args.length > 5 ? Integer.parseInt(args[5]) : 128;
    int maxBatch = java.util.Arrays.stream(batches).max().orElse(1);
    int maxPrompt = java.util.Arrays.stream(prompts).max().orElse(512);
    int perSlot = Math.max(maxPrompt + 16, Math.max(128, decodeContext) + decodeTokens + 16);
    ModelParameters params = new ModelParameters()
        .setModel(gguf)
        .setThreads(threads)
        .setThreadsBatch(threads)
        .setParallel(maxBatch)
        .setCtxSize(perSlot * maxBatch)
        .setBatchSize(2048);
    LlamaModel model = new LlamaModel(params);
    System.out.println("llama.cpp (de.kherud:llama 4.2.0) on " + gguf + ", " + threads + " threads");
    String first = greedy(model, prompt(128), 16);
    System.out.println("greedy text after a 128-token prompt: " + first.replace("\n", "\\n"));
    for (int batch : batches) {
      double tps = decode(model, batch, decodeContext, decodeTokens);
      System.out.printf(Locale.ROOT, "decode batch %2d: %8.1f tokens/s%n", batch, tps);
    }
    greedy(model, prompt(64), 1); // warm-up
    for (int p : prompts) {
      double best = 0;
      for (int rep = 0; rep < 2; rep++) {
        long start = System.nanoTime();
        greedy(model, prompt(p), 1);
        best = Math.max(best, p / ((System.nanoTime() - start) / 1e9));
      }
      System.out.printf(Locale.ROOT, "prefill %5d tokens: %8.1f tokens/s%n", p, best);
    }
    System.out.flush();
    // Closing the model can hang in the bundled server's shutdown; the numbers are out.
    Runtime.getRuntime().halt(0);
  }

  static String prompt(int tokens) {
    return "hello" + " hello".repeat(tokens - 1);
  }

  private static InferenceParameters params(String prompt, int n) {
    return new InferenceParameters(prompt).setTemperature(0f).setNPredict(n).setIgnoreEos(true).setCachePrompt(false);
  }

  private static String greedy(LlamaModel model, String prompt, int n) {
    StringBuilder text = new StringBuilder();
    for (LlamaOutput o : model.generate(params(prompt, n))) {
      text.append(o.text);
    }
    return text.toString();
  }

  private static double decode(LlamaModel model, int batch, int promptTokens, int n) throws Exception {
    List<long[]> streams = new ArrayList<>();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int b = 0; b < batch; b++) {
      long[] times = new long[n];
      streams.add(times);
      // Different prompts per stream (a leading digit), so no slot reuses another's cache.
      String prompt = b + prompt(promptTokens - 1);
      threads.add(Thread.ofPlatform().start(() -> {
        try {
          start.await();
        } catch (InterruptedException e) {
          return;
        }
        int i = 0;
        for (LlamaOutput o : model.generate(params(prompt, n))) {
          if (i < times.length) {
            times[i++] = System.nanoTime();
          }
        }
      }));
    }
    start.countDown();
    for (Thread t : threads) {
      t.join();
    }
    return TokenTimes.steadyDecodeRate(streams);
  }

  private static int[] ints(String csv) {
    return java.util.Arrays.stream(csv.split(",")).mapToInt(Integer::parseInt).toArray();
  }
}
