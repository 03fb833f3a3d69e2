package dev.tandem.engine;

import dev.tandem.common.FinishReason;
import dev.tandem.common.TokenLogprob;

/**
 * What one step produced for one request: new tokens, and a finish reason on the last output
 * ({@code null} before; an engine ends a request with {@code STOP}, {@code LENGTH} or {@code
 * CANCELLED}). {@code cachedTokens} counts prompt tokens served from the prefix cache. {@code
 * logprobs} has one entry per new token when the request asked for them, else null; {@code
 * promptLogprobs}, on a request's first output when it asked for them, one per prompt token after
 * the first; {@code embedding}, on the first output of a request that asked for it ({@code
 * GenerationRequest.embed}), the final norm's output for the prompt's last token.
 */
public record RequestOutput(
    String requestId,
    int[] newTokens,
    FinishReason finishReason,
    int promptTokens,
    int cachedTokens,
    TokenLogprob[] logprobs,
    TokenLogprob[] promptLogprobs,
    float[] embedding) {

  public RequestOutput(
      String requestId, int[] newTokens, FinishReason finishReason, int promptTokens, int cachedTokens, TokenLogprob[] logprobs,
      TokenLogprob[] promptLogprobs) {
    this(requestId, newTokens, finishReason, promptTokens, cachedTokens, logprobs, promptLogprobs, null);
  }

  public RequestOutput(
      String requestId, int[] newTokens, FinishReason finishReason, int promptTokens, int cachedTokens, TokenLogprob[] logprobs) {
    this(requestId, newTokens, finishReason, promptTokens, cachedTokens, logprobs, null, null);
  }

  public RequestOutput(
      String requestId, int[] newTokens, FinishReason finishReason, int promptTokens, int cachedTokens) {
    this(requestId, newTokens, finishReason, promptTokens, cachedTokens, null);
  }

  public boolean finished() {
    return finishReason != null;
  }
}
