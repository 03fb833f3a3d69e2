package dev.tandem.common;

/**
 * One generated token's log-probability under the model's raw distribution, and the most likely
 * tokens with theirs (most likely first).
 */
public record TokenLogprob(float logprob, int[] topTokenIds, float[] topLogprobs) {}
