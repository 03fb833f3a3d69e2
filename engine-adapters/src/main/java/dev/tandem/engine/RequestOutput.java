package dev.tandem.engine;

/**
 * What one step produced for one request: new tokens, and a finish reason on the last output
 * ({@code null} before). {@code cachedTokens} counts prompt tokens served from the prefix cache.
 * {@code logprobs} has one entry per new token when the request asked for them, else null.
 */
public record RequestOutput(
    String requestId,
    int[] newTokens,
    FinishReason finishReason,
    int promptTokens,
    int cachedTokens,
    TokenLogprob[] logprobs) {

  public RequestOutput(
      String requestId, int[] newTokens, FinishReason finishReason, int promptTokens, int cachedTokens) {
    this(requestId, newTokens, finishReason, promptTokens, cachedTokens, null);
  }

  /**
   * The chosen token's log-probability under the model's raw distribution, and the most likely
   * tokens with theirs (most likely first).
   */
  public record TokenLogprob(float logprob, int[] topTokenIds, float[] topLogprobs) {}

  public boolean finished() {
    return finishReason != null;
  }

  /** Why a request ended. */
  public enum FinishReason {
    /** An end-of-sequence or stop token. */
    STOP,
    /** max_tokens or the context window. */
    LENGTH,
    /** Aborted by the caller. */
    ABORTED
  }
}
