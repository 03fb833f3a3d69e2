package dev.tandem.comparison;

import de.kherud.llama.LlamaModel;
import de.kherud.llama.ModelParameters;
import de.kherud.llama.args.PoolingType;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * llama.cpp's embeddings (the native library bundled in de.kherud:llama 4.2.0, last-token pooling,
 * as Tandem pools) on a GGUF file: the texts read from standard input, one a line, embedded one at a
 * time after one warm-up; prints each text's seconds and vector (as JSON, one line each) and the
 * embeddings per second, for a script to compare with Tandem's.
 *
 * <pre>java ... dev.tandem.comparison.LlamaCppEmbeddings MODEL.gguf threads &lt; texts.txt</pre>
 */
public final class LlamaCppEmbeddings {
  private LlamaCppEmbeddings() {}

  public static void main(String[] args) throws Exception {
    List<String> texts = new ArrayList<>();
    try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (!line.isBlank()) {
          texts.add(line);
        }
      }
    }
    int threads = Integer.parseInt(args[1]);
    ModelParameters params = new ModelParameters()
        .setModel(args[0])
        .setThreads(threads)
        .setThreadsBatch(threads)
        .setCtxSize(4096)
        .setBatchSize(2048)
        .setUbatchSize(2048)
        .enableEmbedding()
        .setPoolingType(PoolingType.LAST);
    LlamaModel model = new LlamaModel(params);
    System.out.println("# llama.cpp (de.kherud:llama 4.2.0) on " + args[0] + ", " + threads + " threads, last-token pooling");
    model.embed(texts.getFirst()); // warm-up
    long all = System.nanoTime();
    for (String text : texts) {
      long start = System.nanoTime();
      float[] v = model.embed(text);
      double seconds = (System.nanoTime() - start) / 1e9;
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "{\"seconds\": %.6f, \"embedding\": [", seconds));
      for (int i = 0; i < v.length; i++) {
        line.append(i == 0 ? "" : ",").append(v[i]);
      }
      System.out.println(line.append("]}"));
    }
    System.out.printf(Locale.ROOT, "# %d embeddings in %.3f s%n", texts.size(), (System.nanoTime() - all) / 1e9);
    System.out.flush();
    Runtime.getRuntime().halt(0); // closing the model can hang in the bundled server's shutdown
  }
}
