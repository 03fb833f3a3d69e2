package dev.tandem.engine;

import java.util.OptionalLong;

/**
 * How to pick each token. Temperature 0 is greedy; {@code seed} makes sampling reproducible.
 * {@code logprobs} is the number of top alternatives to return, or -1 for none.
 */
public record SamplingParams(
    float temperature,
    float topP,
    int topK,
    float minP,
    OptionalLong seed,
    float presencePenalty,
    float frequencyPenalty,
    float repetitionPenalty,
    int logprobs) {

  /** Greedy decoding with no penalties. */
  public static SamplingParams greedy() {
    return new SamplingParams(0f, 1f, -1, 0f, OptionalLong.empty(), 0f, 0f, 1f, -1);
  }

  public boolean isGreedy() {
    return temperature == 0f;
  }
}
