package dev.tandem.common;

/**
 * One token's log-probability under the model's raw distribution, its rank there (1: the likeliest;
 * 0: not known), and the most likely tokens with theirs (most likely first).
 */
public record TokenLogprob(float logprob, int[] topTokenIds, float[] topLogprobs, int rank) {
  /** Rank not known. */
  public TokenLogprob(float logprob, int[] topTokenIds, float[] topLogprobs) {
    this(logprob, topTokenIds, topLogprobs, 0);
  }
}
