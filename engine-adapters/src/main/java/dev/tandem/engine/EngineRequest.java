package dev.tandem.engine;

import java.util.Objects;

/** One generation request as an engine sees it: token ids in, sampling and stop rules. */
public record EngineRequest(
    String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop) {
  public EngineRequest {
    Objects.requireNonNull(requestId, "requestId");
    promptTokens = promptTokens.clone();
    Objects.requireNonNull(sampling, "sampling");
    Objects.requireNonNull(stop, "stop");
    if (promptTokens.length == 0) {
      throw new IllegalArgumentException("request " + requestId + " has an empty prompt");
    }
  }
}
