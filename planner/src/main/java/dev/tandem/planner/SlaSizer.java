package dev.tandem.planner;

/**
 * SLA mode: replicas from a measured {@link Profile}. Prefill workers = the forecast's prompt
 * tokens per second (after cache hits) × the prefill correction ÷ what one worker computes while
 * meeting the TTFT target; decode workers = output tokens per second ÷ what one worker generates
 * at the ITL target (divided by the decode correction) at the mean context {@code isl + osl/2}.
 * Pure and stateless.
 */
public final class SlaSizer {
  private final Profile profile;
  private final SlaTargets targets;

  public SlaSizer(Profile profile, SlaTargets targets) {
    this.profile = profile;
    this.targets = targets;
  }

  public Profile profile() {
    return profile;
  }

  /**
   * The sizing and the figures behind it: {@code prefillWorkers} and {@code decodeWorkers} are the
   * fractional workers each pool's load needs (before rounding up).
   */
  public record Sizing(int prefill, int decode, double prefillPerWorker, double decodePerWorker,
      double prefillWorkers, double decodeWorkers) {
    /** Workers of an aggregated pool, which does both pools' work: the two loads added, rounded up. */
    public int aggregated() {
      return (int) Math.ceil(prefillWorkers + decodeWorkers - 1e-9);
    }
  }

  /** Work already waiting, as prompt and output tokens per second to add to the forecast's. */
  public record Backlog(double prefillTokensPerSecond, double decodeTokensPerSecond) {
    public static final Backlog NONE = new Backlog(0, 0);
  }

  public Sizing size(Forecast f, double prefillCorrection, double decodeCorrection) {
    return size(f, Backlog.NONE, prefillCorrection, decodeCorrection);
  }

  public Sizing size(Forecast f, Backlog backlog, double prefillCorrection, double decodeCorrection) {
    double isl = Math.max(1, f.isl());
    double uncached = Math.max(1, isl * (1 - Math.min(1, f.prefixHitRate())));
    double prefillPerWorker = profile.prefillThroughputWithin(uncached, targets.ttftSeconds());
    double prefillNeed = f.prefillTokensPerSecond() * prefillCorrection + backlog.prefillTokensPerSecond();
    double prefillWorkers = prefillNeed / prefillPerWorker;
    int prefill = (int) Math.ceil(prefillWorkers - 1e-9);
    double context = isl + Math.max(1, f.osl()) / 2;
    double decodePerWorker = profile.decodeThroughputWithin(context, targets.itlSeconds() / decodeCorrection);
    double decodeWorkers = (f.decodeTokensPerSecond() + backlog.decodeTokensPerSecond()) / decodePerWorker;
    int decode = (int) Math.ceil(decodeWorkers - 1e-9);
    return new Sizing(Math.max(0, prefill), Math.max(0, decode), prefillPerWorker, decodePerWorker,
        Math.max(0, prefillWorkers), Math.max(0, decodeWorkers));
  }

  /** TTFT the profile predicts at the observed prompt length and prefill utilisation. */
  public double expectedTtft(double isl, double rho) {
    return profile.expectedTtft(isl, rho);
  }

  /** ITL the profile predicts at {@code batch} sequences per worker of {@code context} tokens. */
  public double expectedItl(double batch, double context) {
    return profile.itl(Math.max(1, batch), context);
  }
}
