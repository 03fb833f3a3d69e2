package dev.tandem.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The prefill pool as a queue, against hand-computed cases; and the length mix it reads. */
class PrefillQueueTest {
  private static final Profile LINEAR = Profiles.linear(40_000, 1e-3); // prefill 40k tok/s at any length

  private static PrefillQueue queue(double[] tokens, double[] counts) {
    return new PrefillQueue(LINEAR, LengthMix.of(tokens, counts));
  }

  @Test
  void erlangCMatchesItsClosedForms() {
    assertEquals(0.6, PrefillQueue.erlangC(1, 0.6), 1e-12); // one server: the chance to wait is its utilisation
    assertEquals(1.0 / 3, PrefillQueue.erlangC(2, 1.0), 1e-12); // (a²/2 · 2) / (1 + a + a²/2 · 2) at a = 1
  }

  @Test
  void oneWorkerAtHalfLoadWithEqualPrompts() {
    // 4,000-token prompts: 0.1 s each; 5 req/s on one worker: ρ 0.5, wait with chance 0.5, its tail
    // e^(−10 t) (M/M/1's 5/s, doubled for deterministic service). P(TTFT > x) = 0.5 e^(−10 (x − 0.1))
    // = 0.1 at x = 0.1 + ln 5 / 10.
    PrefillQueue q = queue(new double[] {4000}, new double[] {1});
    assertEquals(0.1 + Math.log(5) / 10, q.ttftQuantile(5, 1, 0.9), 1e-9);
    assertEquals(Double.POSITIVE_INFINITY, q.ttftQuantile(10, 1, 0.9), "at full load the queue grows without bound");
    assertEquals(0.1, q.ttftQuantile(1e-9, 1, 0.9), 1e-6, "idle: the prefill alone");
  }

  @Test
  void poolingWorkersShortensTheWaitAtTheSameUtilisation() {
    PrefillQueue q = queue(new double[] {4000}, new double[] {1});
    double one = q.ttftQuantile(8, 1, 0.9); // 80% busy
    double ten = q.ttftQuantile(80, 10, 0.9); // 80% busy, one queue for ten
    assertTrue(ten < one, "ten workers " + ten + " vs one " + one);
  }

  @Test
  void workersForKeepsTheQuantileWithinTheTargetWithTheFewest() {
    PrefillQueue q = queue(new double[] {3000}, new double[] {1});
    for (double rate : new double[] {1, 20, 33.3, 100, 1000}) {
      int n = q.workersFor(rate, 0.5, 0.9);
      assertTrue(q.ttftQuantile(rate, n, 0.9) <= 0.5, rate + " req/s on " + n);
      assertTrue(n == 1 || q.ttftQuantile(rate, n - 1, 0.9) > 0.5 || rate * 0.075 / (n - 1) > PrefillQueue.MAX_UTILISATION,
          "one fewer would do at " + rate + " req/s: " + n);
    }
    assertEquals(0, q.workersFor(0, 0.5, 0.9));
    assertEquals(0, q.workersFor(Double.NaN, 0.5, 0.9));
    assertEquals(1 << 20, q.workersFor(Double.POSITIVE_INFINITY, 0.5, 0.9), "bounded, at once");
  }

  @Test
  void aTargetNoWorkerCanMeetIsRelaxedToWhatAnIdlePoolReaches() {
    PrefillQueue q = queue(new double[] {30_000}, new double[] {1}); // 0.75 s each, against 0.5 s
    int n = q.workersFor(10, 0.5, 0.9);
    assertTrue(n >= Math.ceil(10 * 0.75 / PrefillQueue.MAX_UTILISATION), "never past 95% busy: " + n);
    assertTrue(q.ttftQuantile(10, n, 0.9) <= 1.25 * 0.75, "within 1.25× the prefill alone");
  }

  @Test
  void aMixReadFromHistogramBucketsSitsAtTheirMiddles() {
    TreeMap<Double, Double> before = new TreeMap<>();
    before.put(1000.0, 5.0);
    before.put(2000.0, 5.0);
    before.put(Double.POSITIVE_INFINITY, 5.0);
    TreeMap<Double, Double> after = new TreeMap<>();
    after.put(1000.0, 15.0); // 10 new at or below 1,000
    after.put(2000.0, 25.0); // 10 new in (1,000, 2,000]
    after.put(Double.POSITIVE_INFINITY, 30.0); // 5 new above 2,000
    LengthMix m = LengthMix.between(before, after);
    assertEquals(25, m.count(), 1e-12);
    assertEquals(3, m.size());
    assertEquals(500, m.tokens(0), 1e-12);
    assertEquals(1500, m.tokens(1), 1e-12);
    assertEquals(3000, m.tokens(2), 1e-12, "past the last bound: 1.5× it");
    assertEquals((10 * 500 + 10 * 1500 + 5 * 3000) / 25.0, m.mean(), 1e-9);
    assertTrue(LengthMix.between(after, after).isEmpty());
    assertEquals(50, m.plus(m).count(), 1e-12);
    assertThrows(IllegalArgumentException.class, () -> new PrefillQueue(LINEAR, LengthMix.EMPTY));
  }

  @Test
  void capacityIsTheShareOfTheWorkersTimePrefillNeeds() {
    PrefillQueue q = queue(new double[] {4000}, new double[] {1}); // 0.1 s each
    double trickle = q.capacityFor(0.1, 0.5, 0.9);
    assertTrue(trickle > 0.01 && trickle < 0.3, "0.1 req/s of 0.1 s prefills: " + trickle);
    int n = q.workersFor(30, 0.5, 0.9);
    double busy = q.capacityFor(30, 0.5, 0.9);
    assertTrue(busy > 3 && busy <= n, "30 req/s (3 workers' worth of prefill) on " + n + ": " + busy);
    assertEquals(0, q.capacityFor(0, 0.5, 0.9));
  }
}
