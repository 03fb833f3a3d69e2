package dev.tandem.cli;

import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.Profile;
import dev.tandem.planner.SlaTargets;
import picocli.CommandLine.Option;

/** How the planner decides; shared by {@code planner} and {@code simulate}. Pool limits are each command's own. */
final class PlannerOptions {
  @Option(names = "--mode", defaultValue = "${env:TANDEM_PLANNER_MODE:-sla}", description = "sla (needs a profile; load mode without one) or load (default ${DEFAULT-VALUE}).")
  String mode;

  @Option(names = "--interval-s", defaultValue = "${env:TANDEM_PLANNER_INTERVAL_S:-10}", description = "Seconds between decisions (default ${DEFAULT-VALUE}).")
  double intervalSeconds;

  @Option(names = "--predictor", defaultValue = "holt", description = "constant, moving-average, holt, holt-winters or kalman (default ${DEFAULT-VALUE}).")
  String predictor;

  @Option(names = "--season-s", defaultValue = "86400", description = "Season of holt-winters (default ${DEFAULT-VALUE}: a day).")
  double seasonSeconds;

  @Option(names = "--startup-s", defaultValue = "30", description = "How long a new worker takes to serve; the planner sizes that far ahead (default ${DEFAULT-VALUE}).")
  double startupSeconds;

  @Option(names = "--headroom", defaultValue = "0.2", description = "Extra capacity over the forecast in sla mode (default ${DEFAULT-VALUE}).")
  double headroom;

  @Option(names = "--ramp-max-factor", defaultValue = "3",
      description = "A rise in arrivals beyond noise is extrapolated --startup-s ahead, up to this multiple of the rate just measured; 0 turns it off (default ${DEFAULT-VALUE}).")
  double rampMaxFactor;

  @Option(names = "--ttft-ms", defaultValue = "500", description = "TTFT target at --sla-percentile (default ${DEFAULT-VALUE}).")
  double ttftMs;

  @Option(names = "--itl-ms", defaultValue = "50", description = "ITL target (default ${DEFAULT-VALUE}).")
  double itlMs;

  @Option(names = "--sla-percentile", defaultValue = "90",
      description = "Share of requests whose TTFT the prefill pool is sized to keep within --ttft-ms, in percent (default ${DEFAULT-VALUE}: p90; 99 sizes for p99).")
  double slaPercentile;

  @Option(names = "--worker-budget", defaultValue = "0", description = "Most workers across both pools (default ${DEFAULT-VALUE}: none).")
  int workerBudget;

  @Option(names = "--grace-intervals", defaultValue = "2", description = "Intervals after a change before a pool may shrink (default ${DEFAULT-VALUE}).")
  int graceIntervals;

  @Option(names = "--idle-intervals-to-zero", defaultValue = "3", description = "Intervals with no demand before a pool with minimum 0 goes to 0 (default ${DEFAULT-VALUE}).")
  int idleIntervals;

  SlaTargets targets() {
    check();
    return new SlaTargets(ttftMs / 1000, itlMs / 1000, slaPercentile / 100);
  }

  /** Refuses a setting out of its range, naming the flag. */
  private void check() {
    Flags.positive("--interval-s", intervalSeconds);
    Flags.positive("--season-s", seasonSeconds);
    Flags.nonNegative("--startup-s", startupSeconds);
    Flags.nonNegative("--headroom", headroom);
    Flags.nonNegative("--ramp-max-factor", rampMaxFactor);
    Flags.positive("--ttft-ms", ttftMs);
    Flags.positive("--itl-ms", itlMs);
    if (!(slaPercentile >= 50 && slaPercentile < 100)) {
      throw new IllegalArgumentException("--sla-percentile must be at least 50 and below 100, was " + slaPercentile);
    }
    Flags.atLeast("--worker-budget", workerBudget, 0);
    Flags.atLeast("--grace-intervals", graceIntervals, 0);
    Flags.atLeast("--idle-intervals-to-zero", idleIntervals, 1);
  }

  /** A builder with these settings and {@code profile} (null: load mode); the caller adds the pool limits. */
  PlannerConfig.Builder builder(Profile profile) {
    check();
    return PlannerConfig.builder().mode(PlannerConfig.Mode.parse(mode)).profile(profile).intervalSeconds(intervalSeconds)
        .targets(targets()).predictor(predictor).seasonIntervals((int) Math.max(2, Math.round(seasonSeconds / intervalSeconds)))
        .lookaheadIntervals((int) Math.ceil(startupSeconds / intervalSeconds)).headroom(headroom).rampMaxFactor(rampMaxFactor).workerBudget(workerBudget)
        .graceIntervals(graceIntervals).idleIntervalsToZero(idleIntervals);
  }
}
