package dev.tandem.common;

/**
 * A piece of a generation's output stream: new tokens (with their log-probabilities when asked
 * for), and on the last chunk the finish reason. The first chunk also says who served the request
 * ({@link Origin}); prompt and cached token counts come on the first and the last. {@code
 * promptLogprobs}, on the first chunk when asked for: one per prompt token after the first (the
 * log-probability of token i given tokens 0..i-1), else null. {@code embedding}, on the first
 * chunk of a request that asked for it ({@link GenerationRequest#embed}): the final norm's output
 * for the prompt's last token (hidden size), else null.
 */
public record TokenChunk(
    int[] tokens,
    TokenLogprob[] logprobs,
    FinishReason finishReason,
    int promptTokens,
    int cachedTokens,
    Origin origin,
    TokenLogprob[] promptLogprobs,
    float[] embedding) {

  /** A chunk without an embedding. */
  public TokenChunk(
      int[] tokens, TokenLogprob[] logprobs, FinishReason finishReason, int promptTokens, int cachedTokens, Origin origin,
      TokenLogprob[] promptLogprobs) {
    this(tokens, logprobs, finishReason, promptTokens, cachedTokens, origin, promptLogprobs, null);
  }

  /** A chunk without prompt log-probabilities (all but a prompt-logprobs request's first). */
  public TokenChunk(
      int[] tokens, TokenLogprob[] logprobs, FinishReason finishReason, int promptTokens, int cachedTokens, Origin origin) {
    this(tokens, logprobs, finishReason, promptTokens, cachedTokens, origin, null, null);
  }

  /**
   * Who served a generation and what it cost them: the decode (or aggregated) worker and its TTFT,
   * and for a split request the prefill worker, the KV transfer (time, bytes, and the part of it
   * not hidden behind the prefill), or why the worker fell back to prefilling itself.
   */
  public record Origin(
      String workerId,
      long workerTtftMicros,
      String prefillWorkerId,
      String prefillFallback,
      long kvTransferMicros,
      long kvTransferBytes,
      long kvExposedMicros) {
    public boolean split() {
      return prefillWorkerId != null && !prefillWorkerId.isEmpty();
    }

    public boolean fellBack() {
      return prefillFallback != null && !prefillFallback.isEmpty();
    }
  }

  public boolean finished() {
    return finishReason != null;
  }

  /** Log-probabilities, one per token, or none. */
  public int logprobCount() {
    return logprobs == null ? 0 : logprobs.length;
  }
}
