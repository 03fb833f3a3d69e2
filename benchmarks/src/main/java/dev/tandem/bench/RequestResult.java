package dev.tandem.bench;

import java.util.List;

/**
 * What one request measured, all from the client's side except what the server reports when asked
 * for timing: the worker's own time to first token ({@code workerTtftMs}), the frontend's (from the
 * request's arrival to its first token, {@code serverTtftMs}) and when the frontend handed it to
 * the worker ({@code serverDispatchMs}); -1 where not reported.
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
    double serverDispatchMs,
    List<String> workerIds) {

  static RequestResult failed(String error, double e2eMs) {
    return new RequestResult(false, error, -1, List.of(), e2eMs, 0, 0, 0, -1, -1, -1, List.of());
  }
}
