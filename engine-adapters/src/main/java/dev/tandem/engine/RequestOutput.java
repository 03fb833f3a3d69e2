package dev.tandem.engine;

/**
 * What one step produced for one request: new tokens, and a finish reason on the last output
 * ({@code null} before). {@code cachedTokens} counts prompt tokens served from the prefix cache.
 */
public record RequestOutput(
    String requestId, int[] newTokens, FinishReason finishReason, int promptTokens, int cachedTokens) {

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
