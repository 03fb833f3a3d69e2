package dev.tandem.planner.sim;

import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.Profile;
import dev.tandem.planner.SlaTargets;
import dev.tandem.router.SplitPolicy;

/**
 * One simulated run: the workers' timing ({@code profile}), the SLA that counts a request as good,
 * how long a new worker takes to serve, the pools at the start, the planner (null: the pools stay
 * as they started), the split rule, the KV bytes per token and the link they cross, and how many
 * least-loaded workers each routing decision scores besides those holding part of the prompt (0:
 * every worker).
 */
public record SimConfig(
    String name,
    Profile profile,
    SlaTargets targets,
    double startupSeconds,
    int initialPrefill,
    int initialDecode,
    PlannerConfig planner,
    SplitPolicy.Mode split,
    long kvBytesPerToken,
    int layers,
    double linkBytesPerSecond,
    int narrowTo,
    double sampleSeconds) {

  /** A static pool of {@code prefill} + {@code decode} workers, serving from the start. */
  public static SimConfig fixed(String name, Profile profile, SlaTargets targets, int prefill, int decode) {
    return new SimConfig(name, profile, targets, 30, prefill, decode, null, SplitPolicy.Mode.AUTO,
        131_072, 32, 12.5e9, 16, 10);
  }

  /** The same run with a planner sizing the pools, starting from {@code prefill} + {@code decode}. */
  public SimConfig planned(String runName, PlannerConfig plannerConfig, double startup) {
    return new SimConfig(runName, profile, targets, startup, initialPrefill, initialDecode, plannerConfig, split,
        kvBytesPerToken, layers, linkBytesPerSecond, narrowTo, sampleSeconds);
  }

  public SimConfig withNarrowTo(int n) {
    return new SimConfig(name, profile, targets, startupSeconds, initialPrefill, initialDecode, planner, split,
        kvBytesPerToken, layers, linkBytesPerSecond, n, sampleSeconds);
  }
}
