package dev.tandem.planner;

/**
 * How a {@link Planner} decides. Built with {@link #builder()}; every setting has a default an
 * experienced operator would pick (Dynamo's where it has one: 60 s intervals, TTFT 500 ms and ITL
 * 50 ms at p90).
 *
 * @param mode {@code LOAD} (thresholds on what workers report) or {@code SLA} (replicas from a profile)
 * @param profile the measured profile SLA mode reads; null leaves the planner in load mode
 * @param lookaheadIntervals how many intervals ahead to size for: a new worker's start-up time ÷ the interval
 * @param graceIntervals intervals after a change to a pool during which it is not scaled down
 * @param idleIntervalsToZero intervals without any demand before a pool whose minimum is 0 goes to 0
 * @param headroom extra capacity SLA mode plans for, as a fraction of the forecast
 * @param workerBudget the most workers across both pools (0: no budget)
 * @param rampMaxFactor how far a rise beyond noise may be extrapolated, as a multiple of the rate
 *     just measured (0: rises are not extrapolated; otherwise at least 1)
 */
public record PlannerConfig(
    Mode mode,
    Profile profile,
    double intervalSeconds,
    SlaTargets targets,
    PoolLimits prefillLimits,
    PoolLimits decodeLimits,
    int workerBudget,
    LoadThresholds thresholds,
    String predictor,
    int seasonIntervals,
    int lookaheadIntervals,
    int graceIntervals,
    int idleIntervalsToZero,
    double headroom,
    double rampMaxFactor) {

  public enum Mode {
    LOAD,
    SLA;

    public static Mode parse(String s) {
      return switch (s) {
        case "load" -> LOAD;
        case "sla" -> SLA;
        default -> throw new IllegalArgumentException("unknown planner mode '" + s + "'; choose load or sla");
      };
    }
  }

  public PlannerConfig {
    if (!(intervalSeconds > 0)) {
      throw new IllegalArgumentException("planner interval must be positive, was " + intervalSeconds);
    }
    if (workerBudget < 0 || (workerBudget > 0 && prefillLimits.min() + decodeLimits.min() > workerBudget)) {
      throw new IllegalArgumentException("worker budget " + workerBudget + " is below the pools' minimums ("
          + prefillLimits.min() + " prefill + " + decodeLimits.min() + " decode)");
    }
    if (lookaheadIntervals < 0 || graceIntervals < 0 || idleIntervalsToZero < 1 || !(headroom >= 0)) {
      throw new IllegalArgumentException("lookahead and grace must be >= 0, idle-to-zero >= 1, headroom >= 0");
    }
    if (!(rampMaxFactor == 0 || rampMaxFactor >= 1) || Double.isInfinite(rampMaxFactor)) {
      throw new IllegalArgumentException("ramp max factor must be 0 (off) or a finite number >= 1, was " + rampMaxFactor);
    }
    Predictors.create(predictor, seasonIntervals); // fails naming the known predictors
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builds a {@link PlannerConfig}; unset settings keep their defaults. */
  public static final class Builder {
    private Mode mode = Mode.LOAD;
    private Profile profile;
    private double intervalSeconds = 60;
    private SlaTargets targets = SlaTargets.DEFAULTS;
    private PoolLimits prefill = new PoolLimits(1, 8);
    private PoolLimits decode = new PoolLimits(1, 8);
    private int workerBudget;
    private LoadThresholds thresholds = LoadThresholds.DEFAULTS;
    private String predictor = "holt";
    private int seasonIntervals = 1440;
    private int lookaheadIntervals = 1;
    private int graceIntervals = 2;
    private int idleIntervalsToZero = 2;
    private double headroom;
    private double rampMaxFactor = 3;

    public Builder mode(Mode m) { mode = m; return this; }
    public Builder profile(Profile p) { profile = p; return this; }
    public Builder intervalSeconds(double s) { intervalSeconds = s; return this; }
    public Builder targets(SlaTargets t) { targets = t; return this; }
    public Builder prefillLimits(PoolLimits l) { prefill = l; return this; }
    public Builder decodeLimits(PoolLimits l) { decode = l; return this; }
    public Builder workerBudget(int b) { workerBudget = b; return this; }
    public Builder thresholds(LoadThresholds t) { thresholds = t; return this; }
    public Builder predictor(String p) { predictor = p; return this; }
    public Builder seasonIntervals(int n) { seasonIntervals = n; return this; }
    public Builder lookaheadIntervals(int n) { lookaheadIntervals = n; return this; }
    public Builder graceIntervals(int n) { graceIntervals = n; return this; }
    public Builder idleIntervalsToZero(int n) { idleIntervalsToZero = n; return this; }
    public Builder headroom(double h) { headroom = h; return this; }
    public Builder rampMaxFactor(double f) { rampMaxFactor = f; return this; }

    public PlannerConfig build() {
      return new PlannerConfig(mode, profile, intervalSeconds, targets, prefill, decode, workerBudget, thresholds,
          predictor, seasonIntervals, lookaheadIntervals, graceIntervals, idleIntervalsToZero, headroom, rampMaxFactor);
    }
  }
}
