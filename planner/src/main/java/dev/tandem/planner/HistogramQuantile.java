package dev.tandem.planner;

/**
 * Reads a quantile off a cumulative histogram as Prometheus' {@code histogram_quantile} does:
 * linear within the bucket the rank falls in. The live planner reads the frontend's histograms
 * with it, and the simulator its own, so that both see the same p90 of the same gaps.
 */
public final class HistogramQuantile {
  private HistogramQuantile() {}

  /**
   * The {@code q}-quantile of the observations counted in the first {@code n} buckets: {@code
   * le[i]} ascending upper bounds (the first bucket from 0, the last may be +Inf), {@code
   * cumulative[i]} the observations up to {@code le[i]}. A rank in the +Inf bucket reads as the
   * last finite bound (all that is known of it); NaN with no observations.
   */
  public static double of(double[] le, double[] cumulative, int n, double q) {
    if (n == 0 || !(cumulative[n - 1] > 0)) {
      return Double.NaN;
    }
    double rank = q * cumulative[n - 1];
    double prevLe = 0, prevCount = 0;
    for (int i = 0; i < n; i++) {
      if (cumulative[i] >= rank) {
        if (Double.isInfinite(le[i])) {
          return prevLe;
        }
        double inBucket = cumulative[i] - prevCount;
        double f = inBucket <= 0 ? 1 : (rank - prevCount) / inBucket;
        return prevLe + f * (le[i] - prevLe);
      }
      prevLe = le[i];
      prevCount = cumulative[i];
    }
    return prevLe;
  }
}
