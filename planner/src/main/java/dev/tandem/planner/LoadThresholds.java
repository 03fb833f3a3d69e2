package dev.tandem.planner;

/**
 * Load mode's thresholds. Prefill: prompt tokens queued per worker above {@code
 * prefillQueueHigh} adds workers, below {@code prefillQueueLow} may remove one. Decode: the larger
 * of KV use ÷ {@code kvUsageHigh} and running requests per worker ÷ {@code activeHigh} is the
 * pressure; above 1 adds, below {@code lowFraction} may remove. A removal happens only if the
 * load per worker after it stays below {@code lowFraction + (1 − lowFraction)·0.8} of the high
 * mark, so a flat load at a boundary never flips 2 ↔ 1. At most {@code maxStep} workers are added
 * per interval.
 */
public record LoadThresholds(
    double prefillQueueHigh, double prefillQueueLow, double kvUsageHigh, double activeHigh, double lowFraction, int maxStep) {
  public static final LoadThresholds DEFAULTS = new LoadThresholds(8192, 1024, 0.8, 64, 0.4, 2);

  public LoadThresholds {
    if (!(prefillQueueHigh > prefillQueueLow && prefillQueueLow >= 0 && kvUsageHigh > 0 && activeHigh > 0
        && lowFraction > 0 && lowFraction < 1 && maxStep >= 1)) {
      throw new IllegalArgumentException("load thresholds need high > low >= 0, positive KV/active marks, 0 < low fraction < 1, step >= 1");
    }
  }

  /** The fraction of the high mark the load per worker must stay under after a removal. */
  double afterRemovalCeiling() {
    return lowFraction + (1 - lowFraction) * 0.8;
  }
}
