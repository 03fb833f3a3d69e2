package dev.tandem.router;

/** No worker can take a request now (none registered, none reachable, only prefill workers). */
public final class NoWorkerAvailableException extends RuntimeException {
  public NoWorkerAvailableException(String message) {
    super(message);
  }
}
