package dev.tandem.cli;

import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.PoolLimits;
import dev.tandem.planner.Profile;
import dev.tandem.planner.ProfileException;
import dev.tandem.planner.ProfileJson;
import dev.tandem.planner.SlaTargets;
import dev.tandem.planner.sim.ClusterSimulator;
import dev.tandem.planner.sim.MockerProfile;
import dev.tandem.planner.sim.MooncakeTraces;
import dev.tandem.planner.sim.PredictorComparison;
import dev.tandem.planner.sim.SimChart;
import dev.tandem.planner.sim.SimConfig;
import dev.tandem.planner.sim.SimJson;
import dev.tandem.planner.sim.SimReport;
import dev.tandem.planner.sim.SimulationSuite;
import dev.tandem.planner.sim.SyntheticTraces;
import dev.tandem.planner.sim.Trace;
import dev.tandem.planner.sim.TraceRequest;
import dev.tandem.router.SplitPolicy;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    description = {
      "Replays a trace through a simulated cluster and compares the planner with static pools.",
      "Prefill and decode workers are timed by a profile; every request goes through the router's own index, selector and split rule, and the pools are sized by the planner's own code. The planner is compared with a static pool sized for the trace's peak and one sized for its mean. Prints a table; --json and --chart write the details."
    })
final class SimulateCommand implements Callable<Integer> {
  @Mixin PlannerOptions decide;

  @Option(names = "--trace", defaultValue = "bursty", description = "steady, diurnal, bursty, zero, mooncake, or a Mooncake-format JSONL file (default ${DEFAULT-VALUE}).")
  String trace;

  @Option(names = "--rate", defaultValue = "20", description = "Base arrivals per second of a built-in trace (default ${DEFAULT-VALUE}; mooncake: its published 6.56).")
  Double rate;

  @Option(names = "--rate-scale", defaultValue = "1", description = "Multiplies every arrival rate (a file's too: its arrival times are divided), to size the cluster up (default ${DEFAULT-VALUE}).")
  double rateScale;

  @Option(names = "--duration-s", defaultValue = "3600", description = "Length of a built-in trace (default ${DEFAULT-VALUE}).")
  double durationSeconds;

  @Option(names = "--seed", defaultValue = "1", description = "Seed of a built-in trace (default ${DEFAULT-VALUE}).")
  long seed;

  @Option(names = "--profile", description = "Profile JSON from `tandem profile` (default: the mocker's timing model).")
  Path profile;

  @Option(names = "--prefill-max", defaultValue = "2000", description = "Most prefill workers (default ${DEFAULT-VALUE}).")
  int prefillMax;

  @Option(names = "--decode-max", defaultValue = "2000", description = "Most decode workers (default ${DEFAULT-VALUE}).")
  int decodeMax;

  @Option(names = "--min-workers", defaultValue = "0", description = "Fewest workers per pool; 0 lets a pool scale to zero (default ${DEFAULT-VALUE}).")
  int minWorkers;

  @Option(names = "--split", defaultValue = "auto", description = "Split rule: auto, always or never (default ${DEFAULT-VALUE}).")
  String split;

  @Option(names = "--link-gbit-s", defaultValue = "100", description = "KV link between prefill and decode workers (default ${DEFAULT-VALUE}).")
  double linkGbit;

  @Option(names = "--kv-bytes-per-token", defaultValue = "131072", description = "KV bytes per token (default ${DEFAULT-VALUE}: Llama-3.1-8B in bf16).")
  long kvBytesPerToken;

  @Option(names = "--narrow", defaultValue = "16", description = "Workers each routing decision scores besides those holding part of the prompt: the N least loaded (0: all; default ${DEFAULT-VALUE}).")
  int narrow;

  @Option(names = "--planner-only", description = "Run only the planner (no static baselines).")
  boolean plannerOnly;

  @Option(names = "--compare-predictors", description = "Also run the planner with every predictor and print their error and SLA attainment.")
  boolean comparePredictors;

  @Option(names = "--json", description = "Write the results as JSON here.")
  Path json;

  @Option(names = "--chart", description = "Write the planner run's timeline as a PNG here.")
  Path chart;

  @Option(names = "--write-trace", description = "Write the trace in Mooncake's JSONL format here.")
  Path writeTrace;

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    checkOptions();
    Profile p = loadProfile();
    Trace t = trace();
    if (t.requests().isEmpty()) {
      throw new IllegalArgumentException("--trace " + trace + ": no requests to replay");
    }
    if (writeTrace != null) {
      MooncakeTraces.write(t, writeTrace);
    }
    SlaTargets targets = decide.targets();
    PlannerConfig planner = decide.builder(p)
        .prefillLimits(new PoolLimits(Math.min(minWorkers, prefillMax), prefillMax))
        .decodeLimits(new PoolLimits(Math.min(minWorkers, decodeMax), decodeMax)).build();
    SimConfig base = new SimConfig("base", p, targets, decide.startupSeconds, 1, 1, null, SplitPolicy.Mode.parse(split),
        kvBytesPerToken, 32, linkGbit * 1e9 / 8, narrow, Math.max(decide.intervalSeconds, t.durationSeconds() / 720));
    out.printf(Locale.ROOT, "trace %s: %,d requests over %.0f s (mean %.2f/s), profile %s (%s)%n", t.name(), t.requests().size(),
        t.durationSeconds(), t.requests().size() / Math.max(1, t.durationSeconds()), p.model(), p.engine());
    SimulationSuite.Result result;
    if (plannerOnly) {
      ProgressBar bar = new ProgressBar("planner run");
      result = SimulationSuite.plannerOnly(t, base, planner, s -> bar.update(s, t.durationSeconds(), "simulated " + s + " s"));
      bar.done();
    } else {
      result = SimulationSuite.run(t, base, planner, line -> System.err.println("  " + line));
    }
    out.println();
    out.printf("%-12s %9s %8s %8s %8s %9s %12s %8s %6s %10s %8s %9s%n", "run", "SLA met", "TTFT p50", "TTFT p90", "TTFT p99",
        "ITL p90", "worker-s", "mean W", "peak", "goodput/W", "events", "sim/wall");
    for (SimReport r : SimulationSuite.all(result)) {
      if (r != null) {
        out.printf(Locale.ROOT, "%-12s %8.2f%% %7.0fms %7.0fms %7.0fms %7.1fms %,12.0f %8.1f %6d %10.3f %8d %8.0fx%n", r.name(),
            100 * r.slaAttainment(), 1000 * r.ttftP50(), 1000 * r.ttftP90(), 1000 * r.ttftP99(), 1000 * r.itlP90(),
            r.workerSeconds(), r.meanWorkers(), r.peakWorkers(), r.goodputPerWorker(), r.scaleEvents(), r.speedup());
      }
    }
    out.printf(Locale.ROOT, "%nat most %.2f%% of these requests can meet both SLAs on an idle worker (prompt prefilled alone)%n",
        100 * result.attainable());
    if (result.staticPeak() != null) {
      out.printf(Locale.ROOT, "%nplanner vs static-peak (%d prefill + %d decode): %.1f%% of its worker-seconds, %.2f× its goodput per worker;"
              + " vs static-mean: %.2f× its goodput per worker%n", result.peakPrefill(), result.peakDecode(),
          100 * result.planner().workerSeconds() / result.staticPeak().workerSeconds(),
          result.planner().goodputPerWorker() / result.staticPeak().goodputPerWorker(),
          result.planner().goodputPerWorker() / result.staticMean().goodputPerWorker());
    }
    List<PredictorComparison.Row> rows = new ArrayList<>();
    if (comparePredictors) {
      rows = PredictorComparison.run(t, result.plannerRun(), planner, line -> System.err.println("  " + line));
      out.printf("%n%-15s %14s %9s %12s %10s%n", "predictor", "rate error", "SLA met", "worker-s", "goodput/W");
      for (PredictorComparison.Row row : rows) {
        out.printf(Locale.ROOT, "%-15s %13.1f%% %8.2f%% %,12.0f %10.3f%n", row.predictor(), 100 * row.rateMape(),
            100 * row.report().slaAttainment(), row.report().workerSeconds(), row.report().goodputPerWorker());
      }
    }
    if (json != null) {
      SimJson.write(SimJson.of(result, targets, rows), json);
      out.println("wrote " + json);
    }
    if (chart != null) {
      SimChart.write(result, targets, chart);
      out.println("wrote " + chart);
    }
    return 0;
  }

  /** Refuses numbers no simulation can run with, naming the flag (a negative rate would replay nothing and report NaN). */
  private void checkOptions() {
    Flags.positive("--rate", rate);
    Flags.positive("--rate-scale", rateScale);
    Flags.positive("--duration-s", durationSeconds);
    Flags.positive("--link-gbit-s", linkGbit);
    Flags.positive("--kv-bytes-per-token", kvBytesPerToken);
    Flags.atLeast("--prefill-max", prefillMax, 0);
    Flags.atLeast("--decode-max", decodeMax, 0);
    Flags.atLeast("--min-workers", minWorkers, 0);
    Flags.atLeast("--narrow", narrow, 0);
  }

  private Profile loadProfile() {
    try {
      return profile == null ? MockerProfile.defaults() : ProfileJson.read(profile, null);
    } catch (ProfileException e) {
      throw new IllegalArgumentException("--profile " + e.getMessage(), e);
    }
  }

  private Trace trace() {
    try {
      return readTrace();
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("--trace " + (e.getMessage() != null && e.getMessage().contains(trace) ? "" : trace + ": ")
          + e.getMessage(), e);
    }
  }

  private Trace readTrace() throws java.io.IOException {
    if (SyntheticTraces.NAMES.contains(trace)) {
      SyntheticTraces.Spec spec = SyntheticTraces.Spec.of(trace, rate).withDuration(durationSeconds);
      spec = new SyntheticTraces.Spec(spec.shape(), spec.durationSeconds(), spec.baseRate() * rateScale, spec.meanIsl(), spec.meanOsl(), seed);
      return SyntheticTraces.generate(spec);
    }
    Path file = Path.of(trace);
    if (!Files.exists(file)) {
      throw new IllegalArgumentException("--trace " + trace + ": neither a built-in trace " + SyntheticTraces.NAMES + " nor a file");
    }
    Trace t = MooncakeTraces.read(file);
    if (rateScale != 1) {
      List<TraceRequest> scaled = t.requests().stream()
          .map(r -> new TraceRequest(r.arrivalSeconds() / rateScale, r.inputTokens(), r.outputTokens(), r.blockIds())).toList();
      t = new Trace(t.name(), scaled, t.blockTokens());
    }
    return t;
  }
}
