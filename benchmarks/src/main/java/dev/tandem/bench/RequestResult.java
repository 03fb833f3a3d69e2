package dev.tandem.bench;

import java.util.List;

/**
 * What one request measured, all from the client's side except {@code workerTtftMs}, which the
 * server reports when asked for timing: the worker's own time to first token, and the frontend's
 * (from the request's arrival to its first token).
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
    double serverTtftMs,
    List<String> workerIds) {

  static RequestResult failed(String error, double e2eMs) {
    return new RequestResult(false, error, -1, List.of(), e2eMs, 0, 0, 0, -1, -1, List.of());
  }
}
