package dev.tandem.frontend.openai;

import java.util.List;
import java.util.OptionalLong;

/**
 * A validated chat or text completion request, ready to run: the tokenized prompts, how many
 * choices per prompt, sampling, stop rules and output options. {@code logprobs} is -1 when no
 * log-probabilities are wanted, else how many top alternatives to return with each token.
 */
public record GenerationSpec(
    Kind kind,
    String model,
    List<int[]> prompts,
    int n,
    Sampling sampling,
    int maxTokens,
    List<String> stopStrings,
    int[] stopTokenIds,
    boolean ignoreEos,
    boolean skipSpecialTokens,
    boolean stream,
    boolean includeUsage,
    boolean timing,
    String pinnedWorker,
    int logprobs) {

  public GenerationSpec {
    prompts = List.copyOf(prompts);
    stopStrings = List.copyOf(stopStrings);
  }

  /** Which OpenAI endpoint the request came through. */
  public enum Kind {
    CHAT,
    COMPLETION
  }

  /** Sampling settings; defaults are OpenAI's (temperature 1, top_p 1). */
  public record Sampling(
      float temperature,
      float topP,
      int topK,
      float minP,
      OptionalLong seed,
      float presencePenalty,
      float frequencyPenalty,
      float repetitionPenalty) {}

  /** Total number of sequences generated: prompts × n. */
  public int choiceCount() {
    return prompts.size() * n;
  }
}
