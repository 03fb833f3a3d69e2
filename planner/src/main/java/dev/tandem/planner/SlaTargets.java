package dev.tandem.planner;

/** The latency targets SLA mode sizes for, at p90: time to first token and inter-token latency. */
public record SlaTargets(double ttftSeconds, double itlSeconds) {
  public static final SlaTargets DEFAULTS = new SlaTargets(0.5, 0.05);

  public SlaTargets {
    if (!(ttftSeconds > 0 && itlSeconds > 0)) {
      throw new IllegalArgumentException("SLA targets must be positive, were TTFT " + ttftSeconds + " s, ITL " + itlSeconds + " s");
    }
  }

  /** Whether a request with this TTFT and mean ITL met both targets. */
  public boolean met(double ttft, double itl) {
    return ttft <= ttftSeconds && itl <= itlSeconds;
  }
}
