package dev.tandem.planner;

import java.util.ArrayDeque;
import java.util.Locale;

/**
 * Sizes the prefill and decode pools once per interval. It feeds each interval's measurements to
 * its predictors (request rate with the configured one; prompt and output length and prefix hit
 * rate with a moving average), forecasts the largest of the rate just measured, the next
 * interval's, the one when a worker started now would serve, and a rise beyond noise extrapolated
 * to then ({@link #ramp}), and sizes for it, adding what is
 * already queued: SLA mode from the profile and the recent prompt lengths with correction factors
 * (observed ÷ expected TTFT and ITL), plus load mode's scale-up signal so that a surge nobody
 * predicted still adds workers (for the prefill pool only once TTFT has missed its target too: a
 * queue of a few long prompts is not a surge); load mode from the workers' reports alone. Then: a
 * pool whose minimum is 0 goes to 0 after {@code idleIntervalsToZero} intervals with no demand at
 * all and comes back at the first request; no pool shrinks within {@code graceIntervals} of its
 * last change; the worker budget is shared in proportion; every result is within each pool's
 * [min, max], whatever the inputs.
 *
 * <p>Pure: no clock, no I/O. Not thread-safe: one loop (or the simulator) owns it.
 */
public final class Planner {
  private static final double CORRECTION_MIN = 1.0;
  private static final double CORRECTION_MAX = 3.0;

  private final PlannerConfig config;
  private final Predictor rate;
  private final Predictor isl;
  private final Predictor osl;
  private final Predictor hit;
  /** The last {@link #MIX_INTERVALS} intervals' uncached prompt lengths, pooled for the prefill queue. */
  private final ArrayDeque<LengthMix> mixes = new ArrayDeque<>();
  private static final int MIX_INTERVALS = 6;
  private final LoadSizer load;
  private final SlaSizer sla;
  private double prefillCorrection = 1;
  private double decodeCorrection = 1;
  private long interval;
  private int idleIntervals;
  private final long[] lastChange = {Long.MIN_VALUE / 2, Long.MIN_VALUE / 2};
  /** The previous interval's arrivals and length, for {@link #ramp}; {@link #plan} sets them last. */
  private double previousRequests = Double.NaN;
  private double previousSeconds = Double.NaN;
  /** The rate the predictor forecast, one interval ago, for the interval just measured; {@link #plan} sets it last. */
  private double forecastForThisInterval = Double.NaN;
  /** How far above the noise (standard deviations of the two counts' difference) a rise must be to count as a ramp. */
  private static final double RAMP_SIGMAS = 3;

  public Planner(PlannerConfig config) {
    this(config, Predictors.create(config.predictor(), config.seasonIntervals()));
  }

  /** A planner whose request rate is forecast by {@code rate} instead of the configured predictor. */
  public Planner(PlannerConfig config, Predictor rate) {
    this.config = config;
    this.rate = rate;
    // Lengths and hit rate drift slowly and carry no season worth modelling; a short moving
    // average keeps one odd interval from resizing the pools.
    this.isl = new MovingAveragePredictor(6);
    this.osl = new MovingAveragePredictor(6);
    this.hit = new MovingAveragePredictor(6);
    this.load = new LoadSizer(config.thresholds());
    // Prefill work lands on the prefill pool, or on the generating pool when there is none.
    int maxPrefill = config.prefillLimits().max() > 0 ? config.prefillLimits().max() : config.decodeLimits().max();
    this.sla = config.mode() == PlannerConfig.Mode.SLA && config.profile() != null
        ? new SlaSizer(config.profile(), config.targets(), maxPrefill) : null;
  }

  public PlannerConfig config() {
    return config;
  }

  /** The mode that actually sizes: {@code sla} with a profile, {@code load} otherwise. */
  public String effectiveMode() {
    return sla != null ? "sla" : "load";
  }

  /** Decides the pools' sizes after an interval measured as {@code s}. */
  public Decision plan(IntervalStats s) {
    interval++;
    double observedRate = s.requestRate();
    rate.observe(observedRate);
    if (observedRate > 0) {
      isl.observe(s.meanIsl());
      osl.observe(s.meanOsl());
      hit.observe(Math.min(1, s.prefixHitRate()));
    }
    if (!s.uncachedMix().isEmpty()) {
      mixes.addLast(s.uncachedMix());
      if (mixes.size() > MIX_INTERVALS) {
        mixes.removeFirst();
      }
    }
    int ahead = 1 + config.lookaheadIntervals();
    // Never below what was just measured: the predictors are there to see rises coming, and a
    // seasonal model that has not seen this phase before may forecast nothing at all.
    double forecastRate = Math.max(observedRate, Math.max(rate.predict(1), rate.predict(ahead)));
    double ramp = ramp(s, ahead);
    boolean ramping = ramp > forecastRate;
    forecastRate = Math.max(forecastRate, ramp);
    Forecast forecast = new Forecast(forecastRate, isl.predict(), osl.predict(), Math.min(1, hit.predict()));
    int prefillBefore = Math.max(0, s.prefill().replicas());
    int decodeBefore = Math.max(0, s.decode().replicas());

    int prefill;
    int decode;
    StringBuilder reason = new StringBuilder();
    if (sla != null) {
      updateCorrections(s);
      Forecast padded = new Forecast(forecast.requestRate() * (1 + config.headroom()), forecast.isl(), forecast.osl(), forecast.prefixHitRate());
      LengthMix mix = LengthMix.EMPTY;
      for (LengthMix m : mixes) {
        mix = mix.plus(m);
      }
      SlaSizer.Sizing sizing = sla.size(padded, mix, backlog(s, forecast), prefillCorrection, decodeCorrection);
      prefill = sizing.prefill();
      decode = sizing.decode();
      reason.append(String.format(Locale.ROOT,
          "sla: %.2f req/s (×%.2f) of %.0f uncached prompt tokens → %d prefill for p%.0f TTFT ≤ %.0f ms; %.0f decode tok/s ÷ %.0f per worker → %d",
          sizing.prefillRate(), prefillCorrection, sizing.meanUncachedTokens(), prefill, 100 * config.targets().quantile(),
          1000 * config.targets().ttftSeconds(), padded.decodeTokensPerSecond(), sizing.decodePerWorker(), decode));
      if (ramping) {
        reason.append(String.format(Locale.ROOT, " (a ramp: %.2f → %.2f req/s, extrapolated %d intervals)",
            previousRequests / previousSeconds, observedRate, ahead));
      }
      if (config.prefillLimits().max() == 0) {
        // No prefill pool: the generating workers prefill their own prompts, so they carry both loads.
        prefill = 0;
        decode = sizing.aggregated();
        reason.append(String.format(Locale.ROOT, "; aggregated (no prefill pool): %.2f + %.2f workers → %d",
            sizing.prefillWorkers(), sizing.decodeWorkers(), decode));
      }
      int surgeP = load.prefill(s.prefill());
      int surgeD = load.decode(s.decode());
      // A queue over its mark with TTFTs still within target is a few long prompts, not a surge.
      boolean ttftMissed = !(s.ttftP90Seconds() <= config.targets().ttftSeconds());
      if (surgeP > prefillBefore && surgeP > prefill && ttftMissed) {
        prefill = surgeP;
        reason.append("; prefill queue over its mark → ").append(surgeP);
      }
      if (surgeD > decodeBefore && surgeD > decode) {
        decode = surgeD;
        reason.append("; decode load over its mark → ").append(surgeD);
      }
    } else {
      prefill = load.prefill(s.prefill());
      decode = load.decode(s.decode());
      reason.append(String.format(Locale.ROOT, "load: %.0f queued prompt tokens on %d prefill, KV %.0f%% and %.0f running on %d decode",
          NonNegative.of(s.prefill().queuedPrefillTokens()), prefillBefore, 100 * NonNegative.of(s.decode().kvUsage()),
          NonNegative.of(s.decode().activeRequests()), decodeBefore));
    }

    // Less than half a request forecast per interval is no demand: trend models decay towards 0
    // without reaching it, and a pool must not stay up for a fraction of a request.
    boolean demand = s.anyDemand() || forecastRate * config.intervalSeconds() >= 0.5;
    idleIntervals = demand ? 0 : idleIntervals + 1;
    if (idleIntervals >= config.idleIntervalsToZero()) {
      prefill = 0;
      decode = 0;
      reason.append("; idle ").append(idleIntervals).append(" intervals");
    } else if (demand) {
      if (decode < 1) {
        decode = 1;
      }
      if (prefillBefore == 0 && decodeBefore == 0 && prefill < 1 && config.prefillLimits().max() > 0) {
        prefill = 1; // back from zero: both pools
      }
    }
    prefill = grace(Pool.PREFILL, prefillBefore, prefill);
    decode = grace(Pool.DECODE, decodeBefore, decode);
    prefill = config.prefillLimits().clamp(prefill);
    decode = config.decodeLimits().clamp(decode);
    if (config.workerBudget() > 0 && prefill + decode > config.workerBudget()) {
      int budget = config.workerBudget();
      int p = (int) Math.floor((double) prefill * budget / (prefill + decode));
      p = Math.max(config.prefillLimits().min(), Math.min(p, budget - config.decodeLimits().min()));
      int d = Math.max(config.decodeLimits().min(), budget - p);
      reason.append("; budget ").append(budget).append(" → ").append(p).append(" + ").append(d);
      prefill = p;
      decode = d;
    }
    if (prefill != prefillBefore) {
      lastChange[Pool.PREFILL.ordinal()] = interval;
    }
    if (decode != decodeBefore) {
      lastChange[Pool.DECODE.ordinal()] = interval;
    }
    previousRequests = NonNegative.of(s.requests());
    previousSeconds = s.seconds();
    forecastForThisInterval = rate.predict(1);
    return new Decision(interval, effectiveMode(), forecast, prefillBefore, decodeBefore, prefill, decode,
        prefillCorrection, decodeCorrection, reason.toString());
  }

  /**
   * The rate a rise would reach by the time a worker started now serves ({@code ahead} intervals),
   * when the rise is beyond noise: this interval's arrivals exceed both the previous interval's
   * and what the predictor forecast for this one by more than {@value #RAMP_SIGMAS} standard
   * deviations (Poisson: the square root of the two counts' sum), so a flat load triggers it about
   * once in 700 intervals. Only that unforeseen part of the rise is extrapolated: a rise the
   * predictor saw coming (a seasonal model's second spike) is already in its forecast. At most
   * {@link PlannerConfig#rampMaxFactor()} × the rate just measured; 0 when there is no such rise or
   * that factor is 0. A trend model smooths the first interval of a ramp away; without this,
   * workers for an unannounced surge are asked for one start-up late.
   */
  private double ramp(IntervalStats s, int ahead) {
    double requests = NonNegative.of(s.requests());
    double seconds = s.seconds();
    if (!(seconds > 0) || !(previousSeconds > 0) || !Double.isFinite(previousRequests)) {
      return 0;
    }
    // The previous count at this interval's length, or the forecast count if that was more.
    double expected = Math.max(previousRequests * seconds / previousSeconds, NonNegative.of(forecastForThisInterval) * seconds);
    double rise = requests - expected;
    if (config.rampMaxFactor() == 0 || !(rise > RAMP_SIGMAS * Math.sqrt(requests + expected))) {
      return 0;
    }
    double rate = requests / seconds;
    return Math.min(config.rampMaxFactor() * rate, rate + rise / seconds * ahead);
  }

  /**
   * Work already waiting, as extra prompt and output tokens per second to clear within the next
   * interval: prompt tokens queued on the workers, and requests waiting at the frontend for want
   * of a worker (at the forecast's lengths).
   */
  private SlaSizer.Backlog backlog(IntervalStats s, Forecast f) {
    double waiting = NonNegative.of(s.waitingRequests());
    double prompt = NonNegative.of(s.prefill().queuedPrefillTokens()) + NonNegative.of(s.decode().queuedPrefillTokens())
        + waiting * f.isl() * (1 - f.prefixHitRate());
    return new SlaSizer.Backlog(prompt / config.intervalSeconds(), waiting * f.osl() / config.intervalSeconds());
  }

  /** No shrinking within the grace period after a change; growing is always allowed. */
  private int grace(Pool pool, int before, int wanted) {
    if (wanted < before && interval - lastChange[pool.ordinal()] <= config.graceIntervals()) {
      return before;
    }
    return wanted;
  }

  /**
   * Observed ÷ expected latency, smoothed (half old, half new) and kept within [1, 3] (a profile
   * that is pessimistic costs workers; one that is optimistic costs the SLA, so the planner only
   * ever corrects towards more capacity); only from settled intervals (no request waiting for a
   * worker, no worker starting), since latency from being short of workers is not an error of the
   * profile. The expected p90 TTFT is the prefill queue's at the interval's rate, prompt lengths
   * and ready workers.
   */
  private void updateCorrections(IntervalStats s) {
    if (NonNegative.of(s.waitingRequests()) > 0 || s.prefill().starting() > 0 || s.decode().starting() > 0) {
      return;
    }
    double meanIsl = s.meanIsl();
    double uncached = meanIsl * (1 - Math.min(1, NonNegative.of(s.prefixHitRate())));
    int readyP = s.prefill().ready();
    if (Double.isFinite(s.ttftP90Seconds()) && s.ttftP90Seconds() > 0 && (uncached >= 1 || !s.uncachedMix().isEmpty())
        && readyP > 0 && s.requestRate() > 0) {
      double expected = sla.queue(s.uncachedMix(), uncached).ttftQuantile(s.requestRate(), readyP, 0.9);
      prefillCorrection = smooth(prefillCorrection, s.ttftP90Seconds() / expected);
    }
    int readyD = s.decode().ready();
    if (Double.isFinite(s.itlP90Seconds()) && s.itlP90Seconds() > 0 && readyD > 0 && Double.isFinite(meanIsl)) {
      double batch = Math.max(1, NonNegative.of(s.decode().activeRequests()) / readyD);
      double ratio = s.itlP90Seconds() / sla.expectedItl(batch, meanIsl + NonNegative.of(s.meanOsl()) / 2);
      decodeCorrection = smooth(decodeCorrection, ratio);
    }
  }

  private static double smooth(double old, double ratio) {
    if (!Double.isFinite(ratio) || ratio <= 0) {
      return old;
    }
    return Math.max(CORRECTION_MIN, Math.min(CORRECTION_MAX, 0.5 * old + 0.5 * ratio));
  }

}
