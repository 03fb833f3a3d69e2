package dev.tandem.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Load mode, scale to zero, grace, limits and the budget. */
class PlannerTest {
  private static IntervalStats stats(double requests, PoolLoad prefill, PoolLoad decode) {
    return new IntervalStats(60, requests, 1000, 100, 0, Double.NaN, Double.NaN, 0, prefill, decode);
  }

  @Test
  void loadModeAddsPrefillWorkersForAQueueAtMostTheStep() {
    Planner planner = new Planner(PlannerConfig.builder().prefillLimits(new PoolLimits(1, 10)).build());
    Decision d = planner.plan(stats(10, new PoolLoad(1, 0, 100_000, 0, 0), new PoolLoad(1, 0, 0, 0.1, 2)));
    assertEquals(3, d.prefill(), d.reason()); // wants 17, the step allows +2
    assertEquals(1, d.decode(), d.reason());
  }

  @Test
  void aFlatLoadAtTheBoundaryDoesNotOscillate() {
    Planner planner = new Planner(PlannerConfig.builder().graceIntervals(0).build());
    double running = 1.05 * LoadThresholds.DEFAULTS.activeHigh(); // just over one worker's mark
    int decode = 1;
    List<Integer> sizes = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      Decision d = planner.plan(stats(10, new PoolLoad(1, 0, 0, 0, 0), new PoolLoad(decode, 0, 0, 0.2, running)));
      decode = d.decode();
      sizes.add(decode);
    }
    assertEquals(2, sizes.get(0));
    assertTrue(sizes.stream().allMatch(n -> n == 2), "sizes " + sizes);
  }

  @Test
  void loadModeRemovesAnIdleWorkerOneAtATime() {
    Planner planner = new Planner(PlannerConfig.builder().graceIntervals(0).build());
    Decision d = planner.plan(stats(1, new PoolLoad(4, 0, 0, 0, 0), new PoolLoad(4, 0, 0, 0.05, 4)));
    assertEquals(3, d.prefill(), d.reason());
    assertEquals(3, d.decode(), d.reason());
  }

  @Test
  void noScaleDownWithinTheGracePeriodButScaleUpAnyTime() {
    Planner planner = new Planner(PlannerConfig.builder().graceIntervals(2).build());
    PoolLoad busy = new PoolLoad(1, 0, 0, 0.95, 100);
    assertEquals(3, planner.plan(stats(10, new PoolLoad(1, 0, 0, 0, 0), busy)).decode());
    PoolLoad idle = new PoolLoad(3, 0, 0, 0.01, 0);
    assertEquals(3, planner.plan(stats(10, new PoolLoad(1, 0, 0, 0, 0), idle)).decode()); // grace
    assertEquals(3, planner.plan(stats(10, new PoolLoad(1, 0, 0, 0, 0), idle)).decode()); // grace
    assertEquals(2, planner.plan(stats(10, new PoolLoad(1, 0, 0, 0, 0), idle)).decode()); // grace over
    assertEquals(4, planner.plan(stats(10, new PoolLoad(1, 0, 0, 0, 0), new PoolLoad(2, 0, 0, 0.95, 200))).decode());
  }

  @Test
  void scalesToZeroAfterIdleIntervalsAndBackAtTheFirstWaitingRequest() {
    Planner planner = new Planner(PlannerConfig.builder()
        .prefillLimits(new PoolLimits(0, 4)).decodeLimits(new PoolLimits(0, 4)).idleIntervalsToZero(2).graceIntervals(0).build());
    PoolLoad one = new PoolLoad(1, 0, 0, 0, 0);
    Decision first = planner.plan(stats(0, one, one));
    assertEquals(1, first.decode(), "one idle interval is not enough: " + first.reason());
    Decision second = planner.plan(stats(0, one, one));
    assertEquals(0, second.prefill(), second.reason());
    assertEquals(0, second.decode(), second.reason());
    Decision stillZero = planner.plan(stats(0, PoolLoad.EMPTY, PoolLoad.EMPTY));
    assertEquals(0, stillZero.decode());
    Decision back = planner.plan(new IntervalStats(60, 0, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, 1,
        PoolLoad.EMPTY, PoolLoad.EMPTY));
    assertEquals(1, back.prefill(), back.reason());
    assertEquals(1, back.decode(), back.reason());
  }

  @Test
  void aPoolWithMinimumOneNeverGoesToZero() {
    Planner planner = new Planner(PlannerConfig.builder().idleIntervalsToZero(1).build());
    Decision d = planner.plan(stats(0, new PoolLoad(1, 0, 0, 0, 0), new PoolLoad(1, 0, 0, 0, 0)));
    assertEquals(1, d.prefill());
    assertEquals(1, d.decode());
  }

  @Test
  void theBudgetIsSharedInProportion() {
    Planner planner = new Planner(PlannerConfig.builder().mode(PlannerConfig.Mode.SLA).profile(Profiles.linear(40_000, 1e-3))
        .predictor("constant").prefillLimits(new PoolLimits(1, 100)).decodeLimits(new PoolLimits(1, 100)).workerBudget(6).build());
    Decision d = planner.plan(stats(6000, new PoolLoad(1, 0, 0, 0, 0), new PoolLoad(1, 0, 0, 0, 0)));
    assertEquals(6, d.prefill() + d.decode(), d.reason());
    assertTrue(d.prefill() >= 1 && d.decode() >= 1, d.reason());
  }

  @Test
  void slaModeWithoutAProfileSizesByLoad() {
    Planner planner = new Planner(PlannerConfig.builder().mode(PlannerConfig.Mode.SLA).build());
    assertEquals("load", planner.effectiveMode());
  }

  /**
   * Whatever the inputs — NaN, infinities, negatives, huge numbers, in the measurements and in the
   * prompt-length mix — the result respects min, max and budget.
   */
  @Test
  void neverOutsideTheLimitsWhateverTheInputs() {
    Random r = new Random(7);
    double[] odd = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -1, 0, 1e300, -1e300};
    for (int trial = 0; trial < 200; trial++) {
      int minP = r.nextInt(3), minD = r.nextInt(3);
      PoolLimits lp = new PoolLimits(minP, minP + r.nextInt(6));
      PoolLimits ld = new PoolLimits(minD, minD + r.nextInt(6));
      int budget = r.nextBoolean() ? 0 : minP + minD + r.nextInt(6);
      PlannerConfig.Builder b = PlannerConfig.builder().prefillLimits(lp).decodeLimits(ld).workerBudget(budget)
          .predictor(Predictors.NAMES.get(r.nextInt(Predictors.NAMES.size()))).graceIntervals(r.nextInt(3))
          .lookaheadIntervals(r.nextInt(3)).seasonIntervals(4);
      if (r.nextBoolean()) {
        b.mode(PlannerConfig.Mode.SLA).profile(Profiles.linear(1 + r.nextDouble() * 50_000, 1e-5 + r.nextDouble() * 1e-2));
      }
      Planner planner = new Planner(b.build());
      for (int i = 0; i < 50; i++) {
        PoolLoad p = new PoolLoad(r.nextInt(10) - 2, r.nextInt(3), pick(r, odd, 1e6), pick(r, odd, 1.5), pick(r, odd, 500));
        PoolLoad d = new PoolLoad(r.nextInt(10) - 2, r.nextInt(3), pick(r, odd, 1e6), pick(r, odd, 1.5), pick(r, odd, 500));
        IntervalStats s = new IntervalStats(pick(r, odd, 120), pick(r, odd, 1e5), pick(r, odd, 1e5), pick(r, odd, 1e4),
            pick(r, odd, 1.5), pick(r, odd, 10), pick(r, odd, 1), pick(r, odd, 100), p, d,
            r.nextBoolean() ? LengthMix.EMPTY
                : LengthMix.of(new double[] {pick(r, odd, 1e5), pick(r, odd, 1e3)}, new double[] {pick(r, odd, 50), pick(r, odd, 50)}));
        Decision decision = planner.plan(s);
        assertTrue(decision.prefill() >= lp.min() && decision.prefill() <= lp.max(), "prefill " + decision + " limits " + lp);
        assertTrue(decision.decode() >= ld.min() && decision.decode() <= ld.max(), "decode " + decision + " limits " + ld);
        if (budget > 0) {
          assertTrue(decision.prefill() + decision.decode() <= budget, decision + " budget " + budget);
        }
      }
    }
  }

  /** The rate forecast after intervals of 10 s with {@code counts} arrivals, a constant predictor, 3 intervals of lookahead. */
  private static double forecastAfter(double... counts) {
    Planner planner = new Planner(PlannerConfig.builder().predictor("constant").intervalSeconds(10).lookaheadIntervals(3).build());
    PoolLoad idle = new PoolLoad(1, 0, 0, 0, 0);
    Decision d = null;
    for (double n : counts) {
      d = planner.plan(new IntervalStats(10, n, 1000, 100, 0, Double.NaN, Double.NaN, 0, idle, idle));
    }
    return d.forecast().requestRate();
  }

  /**
   * A rise beyond noise is extrapolated to when a worker started now would serve: 193 then 333
   * arrivals in 10 s (a rise of 140, over 3σ = 3 × √526 = 68.8) is +14 req/s an interval, so 4
   * intervals ahead 33.3 + 4 × 14 = 89.3 req/s, at most 3 × 33.3.
   */
  @Test
  void aRiseBeyondNoiseIsExtrapolatedToWhenANewWorkerServes() {
    assertEquals(89.3, forecastAfter(193, 333), 1e-9);
    assertEquals(3 * 40, forecastAfter(100, 400), 1e-9, "capped at three times the rate just measured");
  }

  /**
   * Only the part of a rise the predictor did not forecast is extrapolated (a seasonal model's
   * second spike is already in its forecast): 193 then 333 arrivals, as above, with a predictor that
   * forecast 333 (nothing unforeseen: the forecast is the rate), 250 (83 over, beyond 3 × √583 =
   * 72.4: 33.3 + 4 × 8.3 = 66.5 req/s), or 193 (the whole rise: 89.3, as with the previous count).
   */
  @Test
  void onlyTheRiseThePredictorDidNotForecastIsExtrapolated() {
    assertEquals(33.3, forecastWith(33.3, 193, 333), 1e-9);
    assertEquals(66.5, forecastWith(25, 193, 333), 1e-9);
    assertEquals(89.3, forecastWith(19.3, 193, 333), 1e-9);
  }

  /** As {@link #forecastAfter}, with a predictor that forecasts {@code rate} whatever it sees. */
  private static double forecastWith(double rate, double... counts) {
    Predictor fixed = new Predictor() {
      @Override public String name() { return "fixed"; }
      @Override public void observe(double value) {}
      @Override public double predict(int steps) { return rate; }
    };
    Planner planner = new Planner(PlannerConfig.builder().intervalSeconds(10).lookaheadIntervals(3).build(), fixed);
    PoolLoad idle = new PoolLoad(1, 0, 0, 0, 0);
    Decision d = null;
    for (double n : counts) {
      d = planner.plan(new IntervalStats(10, n, 1000, 100, 0, Double.NaN, Double.NaN, 0, idle, idle));
    }
    return d.forecast().requestRate();
  }

  /** {@code rampMaxFactor} 0 turns ramps off; a factor between 0 and 1 (or infinite) is refused. */
  @Test
  void rampsCanBeTurnedOffAndABadFactorIsRefused() {
    Planner planner = new Planner(PlannerConfig.builder().predictor("constant").intervalSeconds(10).lookaheadIntervals(3)
        .rampMaxFactor(0).build());
    PoolLoad idle = new PoolLoad(1, 0, 0, 0, 0);
    planner.plan(new IntervalStats(10, 193, 1000, 100, 0, Double.NaN, Double.NaN, 0, idle, idle));
    Decision d = planner.plan(new IntervalStats(10, 333, 1000, 100, 0, Double.NaN, Double.NaN, 0, idle, idle));
    assertEquals(33.3, d.forecast().requestRate(), 1e-9);
    for (double bad : new double[] {0.5, -1, Double.NaN, Double.POSITIVE_INFINITY}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PlannerConfig.builder().rampMaxFactor(bad).build());
      assertTrue(e.getMessage().contains("ramp max factor"), e.getMessage());
    }
  }

  /** A rise within the noise of two counts, a fall, or a first interval is no ramp: the forecast is the rate measured. */
  @Test
  void aRiseWithinNoiseIsNotARamp() {
    assertEquals(23, forecastAfter(200, 230), 1e-9); // 30 < 3 × √430 = 62.2
    assertEquals(19.3, forecastAfter(333, 193), 1e-9);
    assertEquals(33.3, forecastAfter(333), 1e-9);
    double flat = 0;
    Random r = new Random(5);
    double[] counts = new double[500];
    int ramps = 0;
    for (int i = 0; i < counts.length; i++) {
      counts[i] = Math.max(0, Math.round(200 + r.nextGaussian() * Math.sqrt(200))); // Poisson-like around 20 req/s
    }
    Planner planner = new Planner(PlannerConfig.builder().predictor("constant").intervalSeconds(10).lookaheadIntervals(3).build());
    PoolLoad idle = new PoolLoad(1, 0, 0, 0, 0);
    for (double n : counts) {
      Decision d = planner.plan(new IntervalStats(10, n, 1000, 100, 0, Double.NaN, Double.NaN, 0, idle, idle));
      flat = Math.max(flat, d.forecast().requestRate());
      ramps += d.forecast().requestRate() > n / 10 + 1e-9 ? 1 : 0; // a constant predictor forecasts the rate measured, a ramp more
    }
    assertTrue(flat < 26, "a flat load's forecast stays within its own noise: " + flat);
    assertTrue(ramps <= 2, "a flat load is rarely taken for a ramp: " + ramps + " of 500 intervals");
  }

  private static double pick(Random r, double[] odd, double scale) {
    return r.nextInt(5) == 0 ? odd[r.nextInt(odd.length)] : r.nextDouble() * scale;
  }
}
