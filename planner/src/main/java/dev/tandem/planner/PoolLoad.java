package dev.tandem.planner;

/**
 * One pool as the planner saw it at the end of an interval: workers serving ({@code ready}),
 * workers asked for but not yet serving ({@code starting}), prompt tokens queued on its workers in
 * all, mean fraction of KV blocks in use, and requests running on its workers in all.
 */
public record PoolLoad(int ready, int starting, double queuedPrefillTokens, double kvUsage, double activeRequests) {
  public static final PoolLoad EMPTY = new PoolLoad(0, 0, 0, 0, 0);

  /** Workers serving or on their way. */
  public int replicas() {
    return ready + starting;
  }
}
