package dev.tandem.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** SLA mode's replica counts, with the anchor's worked cases (Dynamo's planner unit tests) and ours. */
class SlaSizerTest {
  private static final double INTERVAL = 60;

  private static Decision plan(Profile profile, double requestsPerInterval, double isl, double osl, double hit) {
    Planner planner = new Planner(PlannerConfig.builder()
        .mode(PlannerConfig.Mode.SLA).profile(profile).intervalSeconds(INTERVAL).predictor("constant")
        .prefillLimits(new PoolLimits(1, 100)).decodeLimits(new PoolLimits(1, 100)).build());
    PoolLoad one = new PoolLoad(1, 0, 0, 0, 0);
    return planner.plan(new IntervalStats(INTERVAL, requestsPerInterval, isl, osl, hit, Double.NaN, Double.NaN, 0, one, one));
  }

  @Test
  void anchorLowLoadTenRequestsIsOnePrefillOneDecode() {
    // 10 requests × 3,000 tokens in 60 s = 500 prompt tok/s against 40k per worker; 25 output tok/s against 10k.
    Decision d = plan(Profiles.linear(40_000, 1e-4), 10, 3000, 150, 0);
    assertEquals(1, d.prefill(), d.reason());
    assertEquals(1, d.decode(), d.reason());
  }

  @Test
  void anchorHighLoadFiveHundredRequestsWithSlowDecodeIsOnePrefillTwoDecode() {
    // 25,000 prompt tok/s fits one 40k worker under the TTFT target; 1,250 output tok/s needs two at 1k.
    Decision d = plan(Profiles.linear(40_000, 1e-3), 500, 3000, 150, 0);
    assertEquals(1, d.prefill(), d.reason());
    assertEquals(2, d.decode(), d.reason());
  }

  @Test
  void theTtftTargetLeavesQueueingHeadroom() {
    // 2,000 × 3,000 / 60 = 100k tok/s: 2.5 workers' worth of 75 ms prefills; 3 keep p90 TTFT within
    // 500 ms. At 1,400 requests (1.75 workers' worth) two do: Erlang C gives a 0.82 chance to wait,
    // the wait's tail e^(−6.67 t) (deterministic service halves M/M/2's mean wait), p90 0.39 s.
    assertEquals(3, plan(Profiles.linear(40_000, 1e-3), 2000, 3000, 150, 0).prefill());
    assertEquals(2, plan(Profiles.linear(40_000, 1e-3), 1400, 3000, 150, 0).prefill());
    assertEquals(5, plan(Profiles.linear(40_000, 1e-3), 2000, 3000, 150, 0).decode()); // 5,000 ÷ 1,000
  }

  @Test
  void aHigherPercentileTargetNeedsMoreWorkers() {
    Planner p99 = new Planner(PlannerConfig.builder()
        .mode(PlannerConfig.Mode.SLA).profile(Profiles.linear(40_000, 1e-3)).intervalSeconds(INTERVAL).predictor("constant")
        .targets(new SlaTargets(0.5, 0.05, 0.99)).prefillLimits(new PoolLimits(1, 100)).decodeLimits(new PoolLimits(1, 100)).build());
    PoolLoad one = new PoolLoad(1, 0, 0, 0, 0);
    Decision d = p99.plan(new IntervalStats(INTERVAL, 1400, 3000, 150, 0, Double.NaN, Double.NaN, 0, one, one));
    assertEquals(3, d.prefill(), d.reason()); // two workers' p99 TTFT is past 500 ms
  }

  @Test
  void aLongPromptTailNeedsMorePrefillWorkersThanItsMean() {
    // The same 3,000-token mean, once as every prompt and once as 95% of 2,000 and 5% of 22,000:
    // the long ones hold a worker for 550 ms while others queue behind them.
    Profile p = Profiles.linear(40_000, 1e-3);
    PoolLoad one = new PoolLoad(1, 0, 0, 0, 0);
    LengthMix tail = LengthMix.of(new double[] {2000, 22000}, new double[] {1900, 100});
    Decision uniform = newPlanner(p).plan(new IntervalStats(INTERVAL, 2000, 3000, 150, 0, Double.NaN, Double.NaN, 0, one, one));
    Decision skewed = newPlanner(p).plan(new IntervalStats(INTERVAL, 2000, 3000, 150, 0, Double.NaN, Double.NaN, 0, one, one, tail));
    assertEquals(3, uniform.prefill(), uniform.reason());
    assertEquals(4, skewed.prefill(), skewed.reason());
  }

  private static Planner newPlanner(Profile p) {
    return new Planner(PlannerConfig.builder().mode(PlannerConfig.Mode.SLA).profile(p).intervalSeconds(INTERVAL).predictor("constant")
        .prefillLimits(new PoolLimits(1, 100)).decodeLimits(new PoolLimits(1, 100)).build());
  }

  @Test
  void cacheHitsReducePrefillWorkers() {
    Decision cold = plan(Profiles.linear(40_000, 1e-3), 2000, 3000, 150, 0);
    Decision warm = plan(Profiles.linear(40_000, 1e-3), 2000, 3000, 150, 0.5);
    assertEquals(3, cold.prefill());
    assertEquals(2, warm.prefill(), warm.reason()); // 1,500-token remainders: 1.25 workers' worth
    assertEquals(cold.decode(), warm.decode()); // decode does not care where the prompt came from
  }

  @Test
  void aSlowerThanProfiledTtftRaisesThePrefillCorrection() {
    Profile p = Profiles.linear(40_000, 1e-3);
    Planner planner = new Planner(PlannerConfig.builder()
        .mode(PlannerConfig.Mode.SLA).profile(p).intervalSeconds(INTERVAL).predictor("constant")
        .prefillLimits(new PoolLimits(1, 100)).decodeLimits(new PoolLimits(1, 100)).graceIntervals(0).build());
    PoolLoad two = new PoolLoad(2, 0, 0, 0, 0);
    // what the queue expects of two workers at 20 req/s of 3,000 tokens: p90 0.21 s
    double expected = new SlaSizer(p, SlaTargets.DEFAULTS).queue(LengthMix.EMPTY, 3000).ttftQuantile(20, 2, 0.9);
    assertEquals(0.2146, expected, 1e-3);
    Decision last = null;
    for (int i = 0; i < 4; i++) { // observed TTFT 4× that
      last = planner.plan(new IntervalStats(INTERVAL, 1200, 3000, 150, 0, 4 * expected, Double.NaN, 0, two, two));
    }
    assertEquals(3.0, last.prefillCorrection(), 1e-9, "smoothed towards 4, kept at its maximum");
    assertEquals(5, last.prefill(), last.reason()); // 3 × 20 req/s of 75 ms: 4.5 workers' worth
  }

  @Test
  void withoutAPrefillPoolTheGeneratingPoolCarriesBothLoads() {
    // 1,400 requests: 2 workers' prefill queue (above); 3,500 output tok/s ÷ 1k = 3.5 workers → 6 aggregated.
    Decision d = aggregated(1400);
    assertEquals(0, d.prefill(), d.reason());
    assertEquals(6, d.decode(), d.reason());
  }

  /** One decision of a planner with no prefill pool at {@code requests} a minute of 3,000-token prompts. */
  private static Decision aggregated(double requests) {
    Planner planner = new Planner(PlannerConfig.builder()
        .mode(PlannerConfig.Mode.SLA).profile(Profiles.linear(40_000, 1e-3)).intervalSeconds(INTERVAL).predictor("constant")
        .prefillLimits(new PoolLimits(0, 0)).decodeLimits(new PoolLimits(1, 100)).build());
    PoolLoad one = new PoolLoad(1, 0, 0, 0, 0);
    return planner.plan(new IntervalStats(INTERVAL, requests, 3000, 150, 0, Double.NaN, Double.NaN, 0, PoolLoad.EMPTY, one));
  }

  @Test
  void batchWithinRespectsKvCapacity() {
    Profile p = new Profile("m", "mocker", 64_000, 256, Profiles.linear(40_000, 1e-4).prefill(), Profiles.linear(40_000, 1e-4).decode());
    assertEquals(16, p.maxBatch(4000)); // 64k tokens of KV ÷ 4,000-token contexts
    assertEquals(16, p.batchWithin(4000, 10));
  }

  @Test
  void aLongQueueAddsPrefillWorkersOnlyOnceTtftMissesItsTarget() {
    // 10 requests a minute need one prefill worker by the profile; 100,000 prompt tokens queued on it
    // are over load mode's mark (8,192 a worker). With p90 TTFT at 0.3 s that is a few long prompts
    // working through; at 2 s (or unmeasured) it is a surge the forecast has not seen.
    Profile p = Profiles.linear(40_000, 1e-4);
    PoolLoad queued = new PoolLoad(1, 0, 100_000, 0, 0);
    PoolLoad one = new PoolLoad(1, 0, 0, 0, 0);
    Decision calm = newPlanner(p).plan(new IntervalStats(INTERVAL, 10, 3000, 150, 0, 0.3, Double.NaN, 0, queued, one));
    Decision late = newPlanner(p).plan(new IntervalStats(INTERVAL, 10, 3000, 150, 0, 2.0, Double.NaN, 0, queued, one));
    Decision unmeasured = newPlanner(p).plan(new IntervalStats(INTERVAL, 10, 3000, 150, 0, Double.NaN, Double.NaN, 0, queued, one));
    assertEquals(1, calm.prefill(), calm.reason());
    assertEquals(3, late.prefill(), late.reason()); // load mode's step: +2
    assertEquals(3, unmeasured.prefill(), unmeasured.reason());
  }

  @Test
  void anAggregatedPoolUnderATrickleIsOneWorker() {
    // 10 requests a minute: the prefill queue needs one worker, but only a sliver of its time;
    // with the decode load beside it that is still one worker, not one for each.
    Decision d = aggregated(10);
    assertEquals(1, d.decode(), d.reason());
  }

  /** A ramp sizes for the extrapolated rate, and the decision says so with the two rates it saw. */
  @Test
  void aRampSizesForWhereTheRiseWillBeAndSaysSo() {
    Planner planner = new Planner(PlannerConfig.builder().mode(PlannerConfig.Mode.SLA).profile(Profiles.linear(40_000, 1e-4))
        .intervalSeconds(10).lookaheadIntervals(3).predictor("constant").headroom(0)
        .prefillLimits(new PoolLimits(1, 100)).decodeLimits(new PoolLimits(1, 100)).build());
    PoolLoad one = new PoolLoad(1, 0, 0, 0, 0);
    planner.plan(new IntervalStats(10, 193, 3000, 150, 0, Double.NaN, Double.NaN, 0, one, one));
    Decision d = planner.plan(new IntervalStats(10, 333, 3000, 150, 0, Double.NaN, Double.NaN, 0, one, one));
    assertEquals(89.3, d.forecast().requestRate(), 1e-9);
    assertTrue(d.reason().contains("a ramp: 19.30 → 33.30 req/s, extrapolated 4 intervals"), d.reason());
    // 89.3 req/s × 3,000 tokens = 268k prompt tok/s: more than 33.3 req/s (100k tok/s) needs of 40k-tok/s workers.
    assertTrue(d.prefill() >= 7, d.reason());
  }
}
