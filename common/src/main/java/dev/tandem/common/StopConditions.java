package dev.tandem.common;

/**
 * When a request stops: after {@code maxTokens} generated tokens, on any of {@code stopTokenIds},
 * or on the model's end-of-sequence tokens unless {@code ignoreEos} — but neither of those before
 * {@code minTokens} tokens are generated (vLLM's {@code min_tokens}: the engine does not draw
 * them until then). Stop strings are matched by the frontend on detokenized text, which then
 * cancels the request.
 */
public record StopConditions(int maxTokens, int[] stopTokenIds, boolean ignoreEos, int minTokens) {
  public StopConditions {
    if (maxTokens <= 0) {
      throw new IllegalArgumentException("maxTokens must be positive, was " + maxTokens);
    }
    if (minTokens < 0 || minTokens > maxTokens) {
      throw new IllegalArgumentException("minTokens must be between 0 and maxTokens (" + maxTokens + "), was " + minTokens);
    }
    stopTokenIds = stopTokenIds.clone();
  }

  /** No minimum. */
  public StopConditions(int maxTokens, int[] stopTokenIds, boolean ignoreEos) {
    this(maxTokens, stopTokenIds, ignoreEos, 0);
  }

  /** Whether a sequence that has generated {@code generated} tokens may end on a stop token or end-of-sequence now. */
  public boolean mayStopAfter(int generated) {
    return generated >= minTokens;
  }

  public static StopConditions maxTokens(int maxTokens) {
    return new StopConditions(maxTokens, new int[0], false);
  }
}
