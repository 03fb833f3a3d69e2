package dev.tandem.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The attended-token count the prefill cost is fitted on and priced with, by hand and against a sum
 * position by position; a model whose layers slide in part, as the mean over its layers.
 */
class AttendedTokensTest {
  @Test
  void withoutAWindowEachPositionAttendsToEveryEarlierToken() {
    assertEquals(0 + 1 + 2 + 3, PrefillCost.attendedTokens(0, 4, 0));
    assertEquals(10 + 11 + 12, PrefillCost.attendedTokens(10, 3, 0));
  }

  @Test
  void aSlidingWindowCapsEachPositionAtTheWindowLessItself() {
    assertEquals(0 + 1 + 2 + 3, PrefillCost.attendedTokens(0, 4, 8)); // within the window: as without
    assertEquals(3 * 7, PrefillCost.attendedTokens(20, 3, 8)); // past it: window − 1 each
    assertEquals(5 + 6 + 7 + 7 + 7, PrefillCost.attendedTokens(5, 5, 8)); // across it
    for (int window : new int[] {1, 2, 7, 16}) {
      for (int computed = 0; computed < 40; computed += 3) {
        for (int n = 1; n < 30; n += 4) {
          double sum = 0;
          for (int p = computed; p < computed + n; p++) {
            sum += Math.min(p, window - 1);
          }
          assertEquals(sum, PrefillCost.attendedTokens(computed, n, window), "window " + window + ", from " + computed + ", " + n);
        }
      }
    }
  }

  /** Gemma 3 1B: 22 of 26 layers look back 512 positions, the other 4 over the whole prompt. */
  @Test
  void aModelWhoseLayersSlideInPartCountsTheMeanOverItsLayers() {
    var gemma = new PrefillCost.Attention(512, 22.0 / 26);
    double full = PrefillCost.attendedTokens(0, 8192, 0);
    double windowed = PrefillCost.attendedTokens(0, 8192, 512);
    assertEquals(4.0 / 26 * full + 22.0 / 26 * windowed, gemma.attended(0, 8192), 1e-6 * full);
    assertEquals(full, new PrefillCost.Attention(512, 0).attended(0, 8192)); // no layer slides
    assertEquals(windowed, new PrefillCost.Attention(512, 1).attended(0, 8192)); // Mistral v0.1: every layer
    assertEquals(PrefillCost.Attention.FULL, new PrefillCost.Attention(0, 0.5), "no window: nothing slides");
    assertThrows(IllegalArgumentException.class, () -> new PrefillCost.Attention(512, 1.5));
    assertThrows(IllegalArgumentException.class, () -> new PrefillCost.Attention(-1, 0));
  }

  /** The priced seconds follow: an 8,192-token prompt on Gemma 3 1B's attention costs what its layers attend to. */
  @Test
  void secondsChargeTheContextTheLayersAttendTo() {
    PrefillCost full = new PrefillCost(50e-6, 2e-9, 0.01);
    PrefillCost gemma = full.withAttention(new PrefillCost.Attention(512, 22.0 / 26));
    double contextFull = full.seconds(8192, 0) - 0.01 - 8192 * 50e-6;
    double contextGemma = gemma.seconds(8192, 0) - 0.01 - 8192 * 50e-6;
    assertEquals(2e-9 * 8192 * 8192 / 2, contextFull, 1e-9);
    assertEquals(2e-9 * gemma.attention().attended(0, 8192), contextGemma, 1e-9);
    assertTrue(contextGemma < 0.3 * contextFull, contextGemma + " s of attention, against " + contextFull + " s in full");
    assertEquals(full.seconds(100, 300), full.withAttention(new PrefillCost.Attention(512, 1)).seconds(100, 300), 1e-6,
        "within the window a sliding layer attends as a full one (to the half-token convention of the full count)");
  }
}
