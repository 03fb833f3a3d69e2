package dev.tandem.frontend.http;

import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationException;
import dev.tandem.router.NoWorkerAvailableException;

/** Failures on the way to or on a worker, as the HTTP errors a client gets. Stateless. */
final class GenerationErrors {
  private GenerationErrors() {}

  /** Routing failed: 503 when no worker can take the request now, else 500. */
  static ApiException routing(RuntimeException e) {
    if (e instanceof ApiException api) {
      return api;
    }
    if (e instanceof NoWorkerAvailableException) {
      return new ApiException(503, "No worker can serve this request now: " + e.getMessage() + ".", "service_unavailable", null, null);
    }
    return new ApiException(500, "Routing failed: " + e.getMessage(), "server_error", null, null);
  }

  /**
   * A worker failed a generation: 400 for a request the worker refused, 503 when the worker could
   * not serve it (worth retrying), 500 otherwise.
   *
   * @param workerId the worker that served the request, or null before its first chunk
   */
  static ApiException worker(String workerId, GenerationException e) {
    String worker = workerId == null ? "the worker" : "worker " + workerId;
    return switch (e.kind()) {
      case INVALID_REQUEST -> ApiException.invalid(null, e.getMessage());
      case UNAVAILABLE ->
          new ApiException(503, worker + " failed while serving this request: " + e.code() + " " + e.getMessage(), "service_unavailable", null, null);
      case INTERNAL -> new ApiException(500, worker + " failed: " + e.code() + " " + e.getMessage(), "server_error", null, null);
    };
  }

  /** A worker ended a request without generating it to the end (cancelled or failed there). */
  static ApiException endedByWorker(FinishReason reason) {
    return new ApiException(500, "The worker ended the request: " + reason.name().toLowerCase(java.util.Locale.ROOT) + ".", "server_error", null, null);
  }

  /** The worker's stream ended without a finished chunk. */
  static ApiException streamEndedEarly(String workerId) {
    return worker(workerId, new GenerationException(GenerationException.Kind.INTERNAL, "UNKNOWN", "the worker ended the stream without finishing", null));
  }
}
