package dev.tandem.comparison;

import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.LlamaOutput;
import de.kherud.llama.ModelParameters;

/**
 * llama.cpp's greedy continuation of each prompt (one per line of stdin), for checking the
 * built-in engine's forward pass against an independent implementation on the same weights: prints
 * {@code GREEDY <json string>} per prompt, the text of {@code tokens} tokens, end of sequence ignored.
 * The context (default 4,096) is what llama.cpp picks a Phi-3 LongRoPE model's factors by.
 *
 * <pre>java ... dev.tandem.comparison.LlamaCppGreedy MODEL.gguf tokens [context] &lt; prompts.txt</pre>
 */
public final class LlamaCppGreedy {
  private LlamaCppGreedy() {}

  public static void main(String[] args) throws Exception {
    int tokens = Integer.parseInt(args[1]);
    int context = args.length > 2 ? Integer.parseInt(args[2]) : 4096;
    LlamaModel model = new LlamaModel(new ModelParameters().setModel(args[0]).setThreads(2).setCtxSize(context));
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    for (String prompt : new String(System.in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).split("\n")) {
      StringBuilder text = new StringBuilder();
      var params = new InferenceParameters(prompt).setTemperature(0f).setNPredict(tokens).setIgnoreEos(true).setCachePrompt(false);
      for (LlamaOutput o : model.generate(params)) {
        text.append(o.text);
      }
      System.out.println("GREEDY " + json.writeValueAsString(text.toString()));
    }
    System.out.flush();
    Runtime.getRuntime().halt(0); // closing can hang in the bundled server's shutdown
  }
}
