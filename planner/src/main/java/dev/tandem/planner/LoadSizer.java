package dev.tandem.planner;

/**
 * Load mode: sizes each pool from what its workers report now (queued prompt tokens; KV use and
 * running requests), with hysteresis. Pure and stateless; grace periods are the planner's.
 */
public final class LoadSizer {
  private final LoadThresholds t;

  public LoadSizer(LoadThresholds thresholds) {
    this.t = thresholds;
  }

  /** Prefill pool: pressure is queued tokens per worker over the high mark. */
  public int prefill(PoolLoad load) {
    double queued = NonNegative.of(load.queuedPrefillTokens());
    return size(load.replicas(), queued / t.prefillQueueHigh(), t.prefillQueueLow() / t.prefillQueueHigh());
  }

  /** Decode pool: pressure is the larger of KV use and running requests per worker over their marks. */
  public int decode(PoolLoad load) {
    int n = Math.max(1, load.ready());
    double kv = NonNegative.of(load.kvUsage()) / t.kvUsageHigh(); // a mean over workers: total pressure = kv × n
    double active = NonNegative.of(load.activeRequests()) / t.activeHigh();
    double total = Math.max(kv * n, active);
    return size(load.replicas(), total, t.lowFraction());
  }

  /**
   * {@code total} is the pool's load in units of one worker's high mark; {@code low} the fraction
   * below which a worker counts as idle.
   */
  private int size(int replicas, double total, double low) {
    int n = Math.max(0, replicas);
    if (n == 0) {
      return total > 0 ? 1 : 0;
    }
    double perWorker = total / n;
    if (perWorker > 1) {
      int needed = (int) Math.ceil(total / ((1 + low) / 2));
      return Math.min(n + t.maxStep(), Math.max(n + 1, needed));
    }
    if (n > 1 && perWorker < low && total / (n - 1) < t.afterRemovalCeiling()) {
      return n - 1;
    }
    return n;
  }

}
