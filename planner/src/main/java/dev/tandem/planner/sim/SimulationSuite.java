package dev.tandem.planner.sim;

import dev.tandem.planner.Forecast;
import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.SlaSizer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The planner against two static pools on the same trace, in one run:
 * <ul>
 *   <li>{@code static-peak}: the cheapest fixed pool that serves the trace's busiest interval —
 *       sized by SLA mode's own formula at the peak arrival rate (mean lengths, the trace's prefix
 *       reuse), then grown in whichever pool misses its target (a worker at a time in small pools,
 *       a twentieth or, while far over target, a tenth of the pool in big ones), until ≥ 99% of
 *       requests meet both SLAs (or within 0.2 points of {@link #attainable}, when that is lower;
 *       at most 40 tries, stopping early when two more steps gain nothing with both p90s within
 *       their targets);
 *   <li>{@code static-mean}: the same formula at the mean arrival rate, not grown;
 *   <li>{@code planner}: starting from one worker a pool, sized every interval by the planner.
 * </ul>
 */
public final class SimulationSuite {
  private SimulationSuite() {}

  /**
   * The three runs; {@code plannerRun} is the planner run's configuration (its starting pools),
   * for further runs on the same footing.
   */
  public record Result(SimReport staticPeak, SimReport staticMean, SimReport planner, int peakPrefill, int peakDecode,
      SimConfig plannerRun, double attainable) {}

  /**
   * The most any pool could achieve: the fraction of requests whose whole prompt, prefilled alone
   * on an idle worker, meets the TTFT target and whose decode alone meets the ITL target (prefix
   * hits ignored, so a slight underestimate of what caching allows).
   */
  public static double attainable(Trace trace, SimConfig base) {
    if (trace.requests().isEmpty()) {
      return 1;
    }
    long ok = 0;
    for (TraceRequest r : trace.requests()) {
      double ttft = base.profile().prefillSeconds(r.inputTokens());
      double itl = base.profile().itl(1, r.inputTokens() + r.outputTokens() / 2.0);
      if (base.targets().met(ttft, itl)) {
        ok++;
      }
    }
    return (double) ok / trace.requests().size();
  }

  public static Result run(Trace trace, SimConfig base, PlannerConfig planner, Consumer<String> progress) {
    double interval = planner.intervalSeconds();
    int[] arrivals = trace.arrivalsPer(interval);
    int peakCount = 0;
    for (int a : arrivals) {
      peakCount = Math.max(peakCount, a);
    }
    double meanRate = trace.requests().size() / Math.max(1, trace.durationSeconds());
    double isl = meanIsl(trace);
    double osl = meanOsl(trace);
    double hit = reuse(trace);
    SlaSizer sizer = new SlaSizer(base.profile(), base.targets());
    SlaSizer.Sizing peak = sizer.size(new Forecast(peakCount / interval, isl, osl, hit), 1, 1);
    int p = Math.max(1, peak.prefill());
    int d = Math.max(1, peak.decode());
    SimReport staticPeak = null;
    double bound = attainable(trace, base);
    double target = Math.min(0.99, bound - 0.002);
    double previous = -1;
    int stalled = 0;
    for (int attempt = 0; attempt < 40; attempt++) {
      progress.accept("static-peak: trying " + p + " prefill + " + d + " decode");
      staticPeak = new ClusterSimulator(named(base, "static-peak", p, d), trace).run(null);
      if (staticPeak.slaAttainment() >= target) {
        break;
      }
      // Two more steps that gain nothing with both p90s within target: the rest is out of any
      // pool's reach. (A pool short of workers gains little per step until it nears the peak.)
      double ttftTarget = base.targets().ttftSeconds(), itlTarget = base.targets().itlSeconds();
      boolean withinTargets = staticPeak.ttftP90() <= ttftTarget && staticPeak.itlP90() <= itlTarget;
      stalled = withinTargets && staticPeak.slaAttainment() - previous < 0.001 ? stalled + 1 : 0;
      if (stalled >= 2) {
        break;
      }
      previous = staticPeak.slaAttainment();
      // A worker at a time in small pools; in big ones a twentieth of the pool, or a tenth while
      // its p90 is over twice its target (so a pool of hundreds gets there in a few dozen runs).
      boolean prefillShort = staticPeak.ttftP90() > ttftTarget || staticPeak.itlP90() <= itlTarget;
      boolean far = prefillShort ? staticPeak.ttftP90() > 2 * ttftTarget : staticPeak.itlP90() > 2 * itlTarget;
      if (prefillShort) {
        p += Math.max(1, p / (far ? 10 : 20));
      } else {
        d += Math.max(1, d / (far ? 10 : 20));
      }
    }
    SlaSizer.Sizing mean = sizer.size(new Forecast(meanRate, isl, osl, hit), 1, 1);
    progress.accept("static-mean: " + Math.max(1, mean.prefill()) + " prefill + " + Math.max(1, mean.decode()) + " decode");
    SimReport staticMean = new ClusterSimulator(named(base, "static-mean", Math.max(1, mean.prefill()), Math.max(1, mean.decode())), trace).run(null);
    progress.accept("planner: " + planner.mode().name().toLowerCase() + " mode, " + planner.predictor() + " predictor");
    SimConfig plannerRun = plannerRun(trace, base, planner, sizer, isl, osl);
    SimReport planned = new ClusterSimulator(plannerRun, trace).run(null);
    return new Result(staticPeak, staticMean, planned, p, d, plannerRun, bound);
  }

  /**
   * The planner run's configuration: it starts where an operator would deploy it, sized for the
   * first interval's load with caches cold.
   */
  private static SimConfig plannerRun(Trace trace, SimConfig base, PlannerConfig planner, SlaSizer sizer, double isl, double osl) {
    double interval = planner.intervalSeconds();
    int[] arrivals = trace.arrivalsPer(interval);
    double rate = arrivals.length == 0 ? 0 : arrivals[0] / interval * (1 + planner.headroom());
    SlaSizer.Sizing s = sizer.size(new Forecast(rate, isl, osl, 0), 1, 1);
    return named(base, "planner", Math.max(1, s.prefill()), Math.max(1, s.decode())).planned("planner", planner, base.startupSeconds());
  }

  /** The planner run alone, from the same start as in {@link #run}; {@code progress} hears simulated seconds. */
  public static Result plannerOnly(Trace trace, SimConfig base, PlannerConfig planner, java.util.function.LongConsumer progress) {
    SimConfig plannerRun = plannerRun(trace, base, planner, new SlaSizer(base.profile(), base.targets()), meanIsl(trace), meanOsl(trace));
    return new Result(null, null, new ClusterSimulator(plannerRun, trace).run(progress), 0, 0, plannerRun, attainable(trace, base));
  }

  private static double meanIsl(Trace trace) {
    return trace.requests().stream().mapToInt(TraceRequest::inputTokens).average().orElse(1);
  }

  private static double meanOsl(Trace trace) {
    return trace.requests().stream().mapToInt(TraceRequest::outputTokens).average().orElse(1);
  }

  private static SimConfig named(SimConfig base, String name, int prefill, int decode) {
    return new SimConfig(name, base.profile(), base.targets(), base.startupSeconds(), prefill, decode, null, base.split(),
        base.kvBytesPerToken(), base.layers(), base.linkBytesPerSecond(), base.narrowTo(), base.sampleSeconds());
  }

  /** The fraction of prompt blocks a trace repeats (what an unbounded cache would serve). */
  static double reuse(Trace trace) {
    Set<Long> seen = new HashSet<>();
    long total = 0, repeated = 0;
    for (TraceRequest r : trace.requests()) {
      for (long id : r.blockIds()) {
        total++;
        if (!seen.add(id)) {
          repeated++;
        }
      }
    }
    return total == 0 ? 0 : (double) repeated / total;
  }

  /** Names of the runs, in the order {@link Result} holds them. */
  public static List<SimReport> all(Result r) {
    List<SimReport> list = new ArrayList<>();
    list.add(r.staticPeak());
    list.add(r.staticMean());
    list.add(r.planner());
    return list;
  }
}
