package dev.tandem.planner;

/**
 * SLA mode: replicas from a measured {@link Profile}. Prefill workers: the fewest that keep the
 * target share of TTFTs ({@link SlaTargets#quantile()}) within the target at the forecast rate (×
 * the prefill correction, plus what is queued), the pool taken as a queue whose service times are
 * the prefill times of the recent uncached prompt lengths ({@link PrefillQueue}; all at the
 * forecast's mean when none were measured yet). Decode workers = output tokens per second ÷ what
 * one worker generates at the ITL target (divided by the decode correction) at the mean context
 * {@code isl + osl/2}. Pure and stateless.
 */
public final class SlaSizer {
  private final Profile profile;
  private final SlaTargets targets;
  private final int maxPrefill;

  public SlaSizer(Profile profile, SlaTargets targets) {
    this(profile, targets, Integer.MAX_VALUE);
  }

  /** A sizer that never asks for more than {@code maxPrefill} prefill workers (the pool's maximum: the search stops there). */
  public SlaSizer(Profile profile, SlaTargets targets, int maxPrefill) {
    this.profile = profile;
    this.targets = targets;
    this.maxPrefill = Math.max(1, maxPrefill);
  }

  public Profile profile() {
    return profile;
  }

  /**
   * The sizing and the figures behind it: the prefill queue's arrival rate (requests per second,
   * corrected, with what is queued) and mean uncached prompt tokens; what one decode worker
   * generates at the ITL target; {@code prefillWorkers} and {@code decodeWorkers} are the workers'
   * worth of time each pool's load needs, fractional (before rounding up; for prefill {@link
   * PrefillQueue#capacityFor}).
   */
  public record Sizing(int prefill, int decode, double prefillRate, double meanUncachedTokens, double decodePerWorker,
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
    return size(f, LengthMix.EMPTY, Backlog.NONE, prefillCorrection, decodeCorrection);
  }

  /** {@code mix}: the uncached prompt lengths recently seen (empty: all at the forecast's mean). */
  public Sizing size(Forecast f, LengthMix mix, Backlog backlog, double prefillCorrection, double decodeCorrection) {
    double isl = Math.max(1, f.isl());
    LengthMix lengths = orAll(mix, isl * (1 - Math.min(1, f.prefixHitRate())));
    PrefillQueue queue = new PrefillQueue(profile, lengths);
    double meanUncached = Math.max(1, lengths.mean());
    double rate = f.requestRate() * prefillCorrection + backlog.prefillTokensPerSecond() / meanUncached;
    int prefill = queue.workersFor(rate, targets.ttftSeconds(), targets.quantile(), maxPrefill);
    double prefillWorkers = queue.capacityOf(prefill, maxPrefill, rate, targets.ttftSeconds(), targets.quantile());
    double context = isl + Math.max(1, f.osl()) / 2;
    double decodePerWorker = profile.decodeThroughputWithin(context, targets.itlSeconds() / decodeCorrection);
    double decodeWorkers = (f.decodeTokensPerSecond() + backlog.decodeTokensPerSecond()) / decodePerWorker;
    int decode = (int) Math.ceil(decodeWorkers - 1e-9);
    return new Sizing(prefill, Math.max(0, decode), rate, meanUncached, decodePerWorker, prefillWorkers, Math.max(0, decodeWorkers));
  }

  /** The prefill pool's queue over {@code mix}, or with every prompt at {@code meanUncached} tokens when it is empty. */
  public PrefillQueue queue(LengthMix mix, double meanUncached) {
    return new PrefillQueue(profile, orAll(mix, meanUncached));
  }

  /** {@code mix}, or when it is empty every prompt at {@code meanUncached} tokens (at least one). */
  private static LengthMix orAll(LengthMix mix, double meanUncached) {
    return mix.isEmpty() ? LengthMix.of(new double[] {Math.max(1, meanUncached)}, new double[] {1}) : mix;
  }

  /** ITL the profile predicts at {@code batch} sequences per worker of {@code context} tokens. */
  public double expectedItl(double batch, double context) {
    return profile.itl(Math.max(1, batch), context);
  }
}
