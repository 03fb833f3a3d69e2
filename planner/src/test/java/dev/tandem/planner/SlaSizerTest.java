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
    // 2,000 × 3,000 / 60 = 100k tok/s. A 3,000-token prefill takes 75 ms, so under a 500 ms target a
    // worker runs at most 85% busy: 34k tok/s each → 3 workers (a naive 100k ÷ 40k also says 3);
    // at 1,400 requests, 70k tok/s: naive 2 workers would run 87.5% busy, over the 85% → 3.
    assertEquals(3, plan(Profiles.linear(40_000, 1e-3), 2000, 3000, 150, 0).prefill());
    assertEquals(3, plan(Profiles.linear(40_000, 1e-3), 1400, 3000, 150, 0).prefill());
    assertEquals(5, plan(Profiles.linear(40_000, 1e-3), 2000, 3000, 150, 0).decode()); // 5,000 ÷ 1,000
  }

  @Test
  void cacheHitsReducePrefillWorkers() {
    Decision cold = plan(Profiles.linear(40_000, 1e-3), 2000, 3000, 150, 0);
    Decision warm = plan(Profiles.linear(40_000, 1e-3), 2000, 3000, 150, 0.5);
    assertEquals(3, cold.prefill());
    assertEquals(2, warm.prefill(), warm.reason()); // 50k tok/s of 1,500-token remainders, 92.5% × 40k each
    assertEquals(cold.decode(), warm.decode()); // decode does not care where the prompt came from
  }

  @Test
  void aSlowerThanProfiledTtftRaisesThePrefillCorrection() {
    Profile p = Profiles.linear(40_000, 1e-3);
    Planner planner = new Planner(PlannerConfig.builder()
        .mode(PlannerConfig.Mode.SLA).profile(p).intervalSeconds(INTERVAL).predictor("constant")
        .prefillLimits(new PoolLimits(1, 100)).decodeLimits(new PoolLimits(1, 100)).graceIntervals(0).build());
    PoolLoad two = new PoolLoad(2, 0, 0, 0, 0);
    Decision first = null;
    for (int i = 0; i < 4; i++) { // observed TTFT 4× what the profile expects at this load
      double expected = p.expectedTtft(3000, 1200 * 3000 / INTERVAL / (2 * 40_000));
      first = planner.plan(new IntervalStats(INTERVAL, 1200, 3000, 150, 0, 4 * expected, Double.NaN, 0, two, two));
    }
    assertTrue(first.prefillCorrection() > 2.5, "correction " + first.prefillCorrection());
    assertTrue(first.prefill() >= 4, first.reason()); // 60k tok/s × ~3 ÷ 34k
  }

  @Test
  void withoutAPrefillPoolTheGeneratingPoolCarriesBothLoads() {
    // 1,400 requests: 70k prompt tok/s ÷ 34k = 2.06 workers; 3,500 output tok/s ÷ 1k = 3.5 workers → 6 aggregated.
    Planner planner = new Planner(PlannerConfig.builder()
        .mode(PlannerConfig.Mode.SLA).profile(Profiles.linear(40_000, 1e-3)).intervalSeconds(INTERVAL).predictor("constant")
        .prefillLimits(new PoolLimits(0, 0)).decodeLimits(new PoolLimits(1, 100)).build());
    PoolLoad one = new PoolLoad(1, 0, 0, 0, 0);
    Decision d = planner.plan(new IntervalStats(INTERVAL, 1400, 3000, 150, 0, Double.NaN, Double.NaN, 0, PoolLoad.EMPTY, one));
    assertEquals(0, d.prefill(), d.reason());
    assertEquals(6, d.decode(), d.reason());
  }

  @Test
  void batchWithinRespectsKvCapacity() {
    Profile p = new Profile("m", "mocker", 64_000, 256, Profiles.linear(40_000, 1e-4).prefill(), Profiles.linear(40_000, 1e-4).decode());
    assertEquals(16, p.maxBatch(4000)); // 64k tokens of KV ÷ 4,000-token contexts
    assertEquals(16, p.batchWithin(4000, 10));
  }
}
