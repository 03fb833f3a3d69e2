package dev.tandem.planner.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.PoolLimits;
import dev.tandem.planner.Profile;
import dev.tandem.planner.SlaTargets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The simulator's bookkeeping: nothing lost, worker-seconds counted, pools following the planner. */
class ClusterSimulatorTest {
  private static final Profile PROFILE = MockerProfile.defaults();

  private static Trace trace(String shape, double rate, double seconds) {
    return SyntheticTraces.generate(SyntheticTraces.Spec.of(shape, rate).withDuration(seconds));
  }

  private static PlannerConfig planner(int min) {
    return PlannerConfig.builder().mode(PlannerConfig.Mode.SLA).profile(PROFILE).intervalSeconds(10).lookaheadIntervals(3)
        .prefillLimits(new PoolLimits(min, 50)).decodeLimits(new PoolLimits(min, 50)).headroom(0.2).build();
  }

  @Test
  void aStaticPoolFinishesEveryRequestAndCostsItsSizeTimesTheDuration() {
    Trace t = trace("steady", 5, 300);
    SimReport r = new ClusterSimulator(SimConfig.fixed("static", PROFILE, SlaTargets.DEFAULTS, 2, 2), t).run(null);
    assertEquals(t.requests().size(), r.completed());
    assertEquals(4 * r.durationSeconds(), r.workerSeconds(), 1e-6);
    assertEquals(0, r.scaleEvents());
    assertTrue(r.slaAttainment() > 0.99, "two of each pool serve 5 req/s: " + r.slaAttainment());
  }

  @Test
  void anOverloadedPoolMissesTheSlaButStillFinishesEverything() {
    Trace t = trace("steady", 40, 120);
    SimReport r = new ClusterSimulator(SimConfig.fixed("small", PROFILE, SlaTargets.DEFAULTS, 1, 1), t).run(null);
    assertEquals(t.requests().size(), r.completed());
    assertTrue(r.slaAttainment() < 0.5, "one of each pool cannot serve 40 req/s: " + r.slaAttainment());
  }

  @Test
  void thePlannerScalesToZeroWhenTrafficStopsAndServesTheFirstRequestAfter() {
    Trace t = trace("zero", 5, 900); // traffic, nothing from 300 s to 600 s, traffic again
    SimConfig run = SimConfig.fixed("p", PROFILE, SlaTargets.DEFAULTS, 1, 1).planned("planner", planner(0), 30);
    SimReport r = new ClusterSimulator(run, t).run(null);
    assertEquals(t.requests().size(), r.completed(), "requests that arrived with no worker waited, none was dropped");
    List<SimReport.Sample> quiet = new ArrayList<>();
    for (SimReport.Sample s : r.timeline()) {
      if (s.time() > 400 && s.time() < 600) {
        quiet.add(s);
      }
    }
    assertTrue(quiet.stream().allMatch(s -> s.prefillHeld() == 0 && s.decodeHeld() == 0), "pools at zero while idle: " + quiet);
    assertTrue(r.timeline().stream().anyMatch(s -> s.time() > 650 && s.decodeReady() > 0), "back up after the pause");
    int peak = r.timeline().stream().mapToInt(s -> s.prefillHeld() + s.decodeHeld()).max().orElseThrow();
    assertTrue(r.workerSeconds() < 0.75 * peak * r.durationSeconds(),
        "a third of the trace idle costs no worker: " + r.workerSeconds() + " worker-s, peak " + peak);
  }

  @Test
  void thePlannerFollowsAStepUpAndDrainsOnTheWayDown() {
    Trace t = trace("bursty", 10, 1200);
    SimConfig run = SimConfig.fixed("p", PROFILE, SlaTargets.DEFAULTS, 2, 2).planned("planner", planner(1), 30);
    SimReport r = new ClusterSimulator(run, t).run(null);
    assertEquals(t.requests().size(), r.completed(), "scale-down drains: no request lost");
    int peakHeld = r.timeline().stream().mapToInt(s -> s.prefillHeld() + s.decodeHeld()).max().orElse(0);
    int calmHeld = r.timeline().stream().filter(s -> s.time() > 100 && s.time() < 150)
        .mapToInt(s -> s.prefillHeld() + s.decodeHeld()).max().orElse(0);
    assertTrue(peakHeld >= 2 * calmHeld, "spikes to 5× grow the pools: peak " + peakHeld + ", calm " + calmHeld);
    assertTrue(r.scaleEvents() > 4, "events " + r.scaleEvents());
  }

  @Test
  void theJsonCarriesThePlannerRunsTimelineAsTheChartDrawsIt() {
    Trace t = trace("zero", 5, 900);
    SimConfig base = SimConfig.fixed("base", PROFILE, SlaTargets.DEFAULTS, 1, 1);
    SimulationSuite.Result result = SimulationSuite.plannerOnly(t, base, planner(0), null);
    var json = SimJson.of(result, SlaTargets.DEFAULTS, List.of());
    var timeline = json.get("timeline");
    List<SimReport.Sample> samples = result.planner().timeline();
    assertEquals(samples.size(), timeline.size());
    int finished = 0, met = 0;
    for (int i = 0; i < samples.size(); i++) {
      assertEquals(samples.get(i).time(), timeline.get(i).get("t_s").asDouble());
      assertEquals(samples.get(i).decodeHeld(), timeline.get(i).get("decode_held").asInt());
      finished += timeline.get(i).get("finished").asInt();
      met += timeline.get(i).get("met").asInt();
    }
    assertEquals(result.planner().completed(), finished, "every request finishes in one window");
    assertEquals(result.planner().slaAttainment(), (double) met / t.requests().size(), 1e-9);
  }

  @Test
  void narrowingToTheLeastLoadedKeepsTheOutcome() {
    Trace t = trace("steady", 60, 240);
    SimConfig all = SimConfig.fixed("all", PROFILE, SlaTargets.DEFAULTS, 4, 6).withNarrowTo(0);
    SimReport a = new ClusterSimulator(all, t).run(null);
    SimReport n = new ClusterSimulator(all.withNarrowTo(2), t).run(null);
    assertEquals(a.completed(), n.completed());
    assertEquals(a.slaAttainment(), n.slaAttainment(), 0.03, "scoring the 2 least loaded plus the prefix holders");
  }

  @Test
  void foresightReadsTheTracesTrueRatesAhead() {
    ForesightPredictor f = new ForesightPredictor(new int[] {10, 20, 50}, 10);
    assertEquals(1.0, f.predict(1), 1e-12, "before any observation: the first interval's rate");
    f.observe(Double.NaN); // what was observed does not matter, only that an interval passed
    assertEquals(2.0, f.predict(1), 1e-12);
    assertEquals(5.0, f.predict(2), 1e-12);
    assertEquals(0.0, f.predict(3), 1e-12, "past the trace's end");
  }

  @Test
  void foresightHasWorkersUpBeforeTheFirstSpikeWhereAPredictorOnlyFollows() {
    Trace t = trace("bursty", 10, 1200); // the first spike starts at 180 s
    PlannerConfig config = PlannerConfig.builder().mode(PlannerConfig.Mode.SLA).profile(PROFILE).intervalSeconds(10)
        .lookaheadIntervals(3).prefillLimits(new PoolLimits(1, 50)).decodeLimits(new PoolLimits(1, 50)).predictor("constant").build();
    SimConfig run = SimConfig.fixed("p", PROFILE, SlaTargets.DEFAULTS, 2, 2).planned("planner", config, 30);
    SimReport following = new ClusterSimulator(run, t).run(null);
    var told = new dev.tandem.planner.Planner(config, new ForesightPredictor(t.arrivalsPer(10), 10));
    SimReport foresight = new ClusterSimulator(run, t, told).run(null);
    assertEquals(t.requests().size(), foresight.completed());
    assertTrue(readyAt(foresight, 195) > readyAt(following, 195),
        "workers serving 15 s into the spike: foresight " + readyAt(foresight, 195) + ", constant " + readyAt(following, 195));
    assertTrue(foresight.slaAttainment() > following.slaAttainment(),
        "foresight " + foresight.slaAttainment() + " vs constant " + following.slaAttainment());
  }

  private static int readyAt(SimReport r, double time) {
    return r.timeline().stream().filter(s -> s.time() >= time).findFirst().map(s -> s.prefillReady() + s.decodeReady()).orElseThrow();
  }

  @Test
  void aRequestAfterScaleToZeroWaitsForAWorkersStartNotForTheIntervalsEnd() {
    // Minute-long intervals, 30 s start-up: the first requests after the pause wait about 31 s
    // (the watch's second, then the start-up), not up to 90 s (the rest of the interval as well).
    Trace t = trace("zero", 5, 900);
    PlannerConfig config = PlannerConfig.builder().mode(PlannerConfig.Mode.SLA).profile(PROFILE).intervalSeconds(60)
        .prefillLimits(new PoolLimits(0, 50)).decodeLimits(new PoolLimits(0, 50)).idleIntervalsToZero(1).build();
    SimReport r = new ClusterSimulator(SimConfig.fixed("p", PROFILE, SlaTargets.DEFAULTS, 1, 1).planned("planner", config, 30), t).run(null);
    assertEquals(t.requests().size(), r.completed());
    assertTrue(r.ttftP99() > 20 && r.ttftP99() < 40, "p99 TTFT " + r.ttftP99() + " s");
  }

  /**
   * The planner reads TTFT and ITL as a frontend records them — a TTFT when the first token comes,
   * each gap between tokens as it passes — not when the request ends: a long answer's TTFT is in
   * the window of its first token, and the windows while it decodes show its gaps.
   */
  @Test
  void latenciesAreSeenWhenTheyHappenNotWhenTheRequestEnds() {
    Trace t = new Trace("one long answer", List.of(
        new TraceRequest(0, 512, 4000, new long[] {1}),
        new TraceRequest(200, 512, 8, new long[] {2})), 512);
    SimReport r = new ClusterSimulator(SimConfig.fixed("static", PROFILE, SlaTargets.DEFAULTS, 1, 1), t).run(null);
    SimReport.Sample first = r.timeline().getFirst();
    assertEquals(10, first.time(), 1e-9);
    assertTrue(first.ttftP90() > 0 && first.ttftP90() < 1, "the first window holds the TTFT: " + first);
    assertEquals(0, first.finished(), "nothing finished yet");
    SimReport.Sample end = r.timeline().stream().filter(s -> s.finished() == 1).findFirst().orElseThrow();
    assertTrue(end.time() >= 30, "4,000 tokens at a batch of one take longer than two windows: " + end);
    List<SimReport.Sample> decoding = r.timeline().stream().filter(s -> s.time() > 10 && s.time() < end.time()).toList();
    assertTrue(!decoding.isEmpty() && decoding.stream().allMatch(s -> s.itlP90() > 0 && s.itlP90() < 0.1 && Double.isNaN(s.ttftP90())),
        "windows while it decodes show its gaps and no TTFT: " + decoding);
  }

  /**
   * A stream that waits for a decode slot after its first token shows the frontend one long gap:
   * with one sequence a worker, 40 two-token answers at once each wait for the ones before them.
   */
  @Test
  void aWaitForADecodeSlotIsAGapTheFrontendSees() {
    Profile one = new Profile(PROFILE.model(), PROFILE.engine(), PROFILE.kvTokens(), 1, PROFILE.prefill(), PROFILE.decode());
    List<TraceRequest> requests = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      requests.add(new TraceRequest(0, 16, 2, new long[] {i}));
    }
    SimReport r = new ClusterSimulator(SimConfig.fixed("static", one, SlaTargets.DEFAULTS, 1, 1), new Trace("queue", requests, 16)).run(null);
    double worstItl = one.itl(1, 17);
    assertTrue(r.timeline().getFirst().itlP90() > 5 * worstItl,
        "the waits dominate the window's gaps: p90 " + r.timeline().getFirst().itlP90() + " s against steps of " + worstItl + " s");
  }

  /** The same trace and settings give the same run: the router's ties come from a fixed seed. */
  @Test
  void aRunRepeatsExactly() {
    Trace t = trace("mooncake", 0, 300);
    SimConfig run = SimConfig.fixed("p", PROFILE, SlaTargets.DEFAULTS, 1, 1).planned("planner", planner(1), 30);
    SimReport a = new ClusterSimulator(run, t).run(null);
    SimReport b = new ClusterSimulator(run, t).run(null);
    assertEquals(a.workerSeconds(), b.workerSeconds());
    assertEquals(a.slaAttainment(), b.slaAttainment());
    assertEquals(a.ttftP90(), b.ttftP90());
    assertEquals(a.timeline(), b.timeline());
  }

  /**
   * A window's p90 inter-token gap is read within its bucket, linearly, as the live planner reads
   * the frontend's histogram, not at the bucket's upper bound: 100 gaps of 20 ms and 10 of 200 ms
   * put the 90th percentile (the 99th gap) at 0.99 of the 20-ms bucket's width; 50 gaps in the
   * bucket below and 50 in it put it (the 90th) at 0.8.
   */
  @Test
  void theP90GapIsReadWithinItsBucket() {
    int b = ClusterSimulator.gapBucket(0.020);
    double lower = ClusterSimulator.gapBound(b - 1);
    double upper = ClusterSimulator.gapBound(b);
    assertTrue(lower < 0.020 && 0.020 <= upper, lower + " .. " + upper);
    double[] buckets = new double[ClusterSimulator.GAP_BUCKETS];
    buckets[b] = 100;
    buckets[ClusterSimulator.gapBucket(0.200)] = 10;
    assertEquals(lower + 0.99 * (upper - lower), ClusterSimulator.p90(buckets), 1e-12);
    buckets = new double[ClusterSimulator.GAP_BUCKETS];
    buckets[b - 1] = 50;
    buckets[b] = 50;
    assertEquals(lower + 0.8 * (upper - lower), ClusterSimulator.p90(buckets), 1e-12);
    assertTrue(Double.isNaN(ClusterSimulator.p90(new double[ClusterSimulator.GAP_BUCKETS])), "no gaps, no p90");
  }
}
