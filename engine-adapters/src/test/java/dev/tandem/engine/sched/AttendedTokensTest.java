package dev.tandem.engine.sched;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The attended-token count the prefill cost is fitted on, by hand and against a sum position by position. */
class AttendedTokensTest {
  @Test
  void withoutAWindowEachPositionAttendsToEveryEarlierToken() {
    assertEquals(0 + 1 + 2 + 3, SchedulingEngine.attendedTokens(0, 4, 0));
    assertEquals(10 + 11 + 12, SchedulingEngine.attendedTokens(10, 3, 0));
  }

  @Test
  void aSlidingWindowCapsEachPositionAtTheWindowLessItself() {
    assertEquals(0 + 1 + 2 + 3, SchedulingEngine.attendedTokens(0, 4, 8)); // within the window: as without
    assertEquals(3 * 7, SchedulingEngine.attendedTokens(20, 3, 8)); // past it: window − 1 each
    assertEquals(5 + 6 + 7 + 7 + 7, SchedulingEngine.attendedTokens(5, 5, 8)); // across it
    for (int window : new int[] {1, 2, 7, 16}) {
      for (int computed = 0; computed < 40; computed += 3) {
        for (int n = 1; n < 30; n += 4) {
          double sum = 0;
          for (int p = computed; p < computed + n; p++) {
            sum += Math.min(p, window - 1);
          }
          assertEquals(sum, SchedulingEngine.attendedTokens(computed, n, window), "window " + window + ", from " + computed + ", " + n);
        }
      }
    }
  }
}
