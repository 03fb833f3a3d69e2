package dev.tandem.common;

/**
 * When a request stops: after {@code maxTokens} generated tokens, on any of {@code stopTokenIds},
 * or on the model's end-of-sequence tokens unless {@code ignoreEos}. Stop strings are matched by
 * the frontend on detokenized text, which then cancels the request.
 */
public record StopConditions(int maxTokens, int[] stopTokenIds, boolean ignoreEos) {
  public StopConditions {
    if (maxTokens <= 0) {
      throw new IllegalArgumentException("maxTokens must be positive, was " + maxTokens);
    }
    stopTokenIds = stopTokenIds.clone();
  }

  public static StopConditions maxTokens(int maxTokens) {
    return new StopConditions(maxTokens, new int[0], false);
  }
}
