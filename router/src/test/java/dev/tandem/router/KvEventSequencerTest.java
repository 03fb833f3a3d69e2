package dev.tandem.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.KvEvent;
import java.util.List;
import org.junit.jupiter.api.Test;

class KvEventSequencerTest {
  private static KvEvent.Cleared e(long id) {
    return new KvEvent.Cleared(id);
  }

  @Test
  void appliesInOrderDropsDuplicatesAndStopsAtAGap() {
    KvEventSequencer s = new KvEventSequencer();
    assertEquals(List.of(e(1), e(2)), s.accept(List.of(e(1), e(2)), false).apply());
    var dup = s.accept(List.of(e(2), e(3)), false);
    assertEquals(List.of(e(3)), dup.apply());
    assertFalse(dup.gap());
    var gap = s.accept(List.of(e(4), e(6), e(7)), false);
    assertEquals(List.of(e(4)), gap.apply());
    assertTrue(gap.gap());
    assertEquals(4, s.lastEventId());
  }

  @Test
  void snapshotResetsAndMovesToItsEventId() {
    KvEventSequencer s = new KvEventSequencer();
    s.accept(List.of(e(1)), false);
    var snap = s.accept(List.of(e(40), e(40)), true);
    assertTrue(snap.reset());
    assertEquals(40, s.lastEventId());
    assertEquals(List.of(e(41)), s.accept(List.of(e(41)), false).apply());
  }
}
