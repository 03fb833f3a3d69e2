package dev.tandem.planner;

/**
 * The latency targets SLA mode sizes for: time to first token and inter-token latency, and the
 * share of requests that must meet the TTFT target ({@code quantile}: 0.9 sizes for p90, 0.99 for p99).
 */
public record SlaTargets(double ttftSeconds, double itlSeconds, double quantile) {
  public static final SlaTargets DEFAULTS = new SlaTargets(0.5, 0.05);

  public SlaTargets {
    if (!(ttftSeconds > 0 && itlSeconds > 0)) {
      throw new IllegalArgumentException("SLA targets must be positive, were TTFT " + ttftSeconds + " s, ITL " + itlSeconds + " s");
    }
    if (!(quantile >= 0.5 && quantile < 1)) {
      throw new IllegalArgumentException("the SLA percentile must be at least 50 and below 100, was " + 100 * quantile);
    }
  }

  /** Targets at p90. */
  public SlaTargets(double ttftSeconds, double itlSeconds) {
    this(ttftSeconds, itlSeconds, 0.9);
  }

  /** Whether a request with this TTFT and mean ITL met both targets. */
  public boolean met(double ttft, double itl) {
    return ttft <= ttftSeconds && itl <= itlSeconds;
  }
}
