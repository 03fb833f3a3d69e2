package dev.tandem.planner;

/**
 * What was measured over one planner interval: its length, the requests that arrived, their mean
 * prompt and output lengths and the fraction of prompt tokens served from cache, the p90 time to
 * first token (of the first tokens in the interval) and inter-token latency (of the gaps between
 * tokens in it), as the frontend's histograms record them (NaN when there were none), the
 * requests waiting at the frontend for want of any worker, each pool's load at its end, and how
 * many prompt tokens each finished request had to compute (its uncached length; {@link
 * LengthMix#EMPTY} when not measured). Values may be NaN or missing (0) when a source could not be
 * read; the planner copes.
 */
public record IntervalStats(
    double seconds,
    double requests,
    double meanIsl,
    double meanOsl,
    double prefixHitRate,
    double ttftP90Seconds,
    double itlP90Seconds,
    double waitingRequests,
    PoolLoad prefill,
    PoolLoad decode,
    LengthMix uncachedMix) {

  public IntervalStats {
    prefill = prefill == null ? PoolLoad.EMPTY : prefill;
    decode = decode == null ? PoolLoad.EMPTY : decode;
    uncachedMix = uncachedMix == null ? LengthMix.EMPTY : uncachedMix;
  }

  /** An interval whose uncached prompt lengths were not measured. */
  public IntervalStats(double seconds, double requests, double meanIsl, double meanOsl, double prefixHitRate,
      double ttftP90Seconds, double itlP90Seconds, double waitingRequests, PoolLoad prefill, PoolLoad decode) {
    this(seconds, requests, meanIsl, meanOsl, prefixHitRate, ttftP90Seconds, itlP90Seconds, waitingRequests, prefill, decode,
        LengthMix.EMPTY);
  }

  public PoolLoad pool(Pool pool) {
    return pool == Pool.PREFILL ? prefill : decode;
  }

  /** Arrivals per second; 0 when the interval or the count is unusable. */
  public double requestRate() {
    return seconds > 0 && Predictor.usable(requests) ? requests / seconds : 0;
  }

  /** Whether anything at all asked for a worker: arrivals, waiting requests or running ones. */
  public boolean anyDemand() {
    return positive(requests) || positive(waitingRequests) || positive(prefill.activeRequests())
        || positive(decode.activeRequests()) || positive(prefill.queuedPrefillTokens());
  }

  private static boolean positive(double v) {
    return Double.isFinite(v) && v > 0;
  }
}
