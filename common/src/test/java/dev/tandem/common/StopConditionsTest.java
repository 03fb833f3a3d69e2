package dev.tandem.common;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class StopConditionsTest {
  private static final int[] EOS = {2, 7};

  @Test
  void aStopIdOrEndOfSequenceEndsASequence() {
    var stop = new StopConditions(16, new int[] {42}, false);
    assertTrue(stop.isEnd(42, EOS));
    assertTrue(stop.isEnd(7, EOS));
    assertFalse(stop.isEnd(3, EOS));
  }

  @Test
  void ignoringEndOfSequenceLeavesOnlyTheStopIds() {
    var stop = new StopConditions(16, new int[] {42}, true);
    assertTrue(stop.isEnd(42, EOS));
    assertFalse(stop.isEnd(2, EOS));
    assertArrayEquals(new int[] {42}, stop.endTokens(EOS));
    assertArrayEquals(new int[] {42, 2, 7}, new StopConditions(16, new int[] {42}, false).endTokens(EOS));
  }

  @Test
  void noEndBeforeTheMinimum() {
    var stop = new StopConditions(16, new int[] {42}, false, 3);
    assertFalse(stop.endsAt(42, 1, EOS));
    assertFalse(stop.endsAt(2, 3, EOS), "the third token is still within min_tokens = 3");
    assertTrue(stop.endsAt(2, 4, EOS));
    assertFalse(stop.endsAt(5, 4, EOS));
    assertTrue(StopConditions.maxTokens(4).endsAt(7, 1, EOS));
  }

  @Test
  void aMinimumPastTheMaximumIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new StopConditions(4, new int[0], false, 5));
  }
}
