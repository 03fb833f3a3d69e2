package dev.tandem.bench;

import java.util.List;

/**
 * What one request measured, all from the client's side except {@code workerTtftMs}, which the
 * server reports (the worker's own time to first token) when asked for timing.
 */
record RequestResult(
    boolean ok,
    String error,
    double ttftMs,
    List<Double> itlMs,
    double e2eMs,
    int outputTokens,
    int promptTokens,
    int cachedTokens,
    double workerTtftMs,
    List<String> workerIds) {

  static RequestResult failed(String error, double e2eMs) {
    return new RequestResult(false, error, -1, List.of(), e2eMs, 0, 0, 0, -1, List.of());
  }
}
