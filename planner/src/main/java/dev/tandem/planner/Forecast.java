package dev.tandem.planner;

/**
 * The load the planner sizes for: requests per second, mean prompt and output tokens, and the
 * fraction of prompt tokens expected from cache.
 */
public record Forecast(double requestRate, double isl, double osl, double prefixHitRate) {
  /** Prompt tokens per second to compute after cache hits. */
  public double prefillTokensPerSecond() {
    return requestRate * isl * (1 - Math.min(1, prefixHitRate));
  }

  /** Output tokens per second. */
  public double decodeTokensPerSecond() {
    return requestRate * osl;
  }
}
