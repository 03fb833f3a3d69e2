package dev.tandem.router;

/**
 * No worker can take a request now (none registered, none reachable, only prefill workers).
 * {@link #noneServing()} says whether no decode or aggregated worker serves at all — a pool scaled
 * to zero, or one still starting — as opposed to every one having refused this request.
 */
public final class NoWorkerAvailableException extends RuntimeException {
  private final boolean noneServing;

  public NoWorkerAvailableException(String message) {
    this(message, false);
  }

  public NoWorkerAvailableException(String message, boolean noneServing) {
    super(message);
    this.noneServing = noneServing;
  }

  /** Whether no worker that generates is serving at all (a caller may wait for one to come). */
  public boolean noneServing() {
    return noneServing;
  }
}
