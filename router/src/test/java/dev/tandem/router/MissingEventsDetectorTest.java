package dev.tandem.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerId;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MissingEventsDetectorTest {
  private static final long S = 1_000_000_000L;
  private static final WorkerId W = new WorkerId("w");
  private static final WorkerId V = new WorkerId("v");

  @Test
  void flagsAWorkerSilentPastTheWindowAndClearsWhenEventsResume() {
    MissingEventsDetector d = new MissingEventsDetector(5 * S);
    d.expectStored(W, 0);
    d.expectStored(W, 3 * S); // a later expectation does not restart the clock
    d.expectStored(V, 0);
    d.storedSeen(V);
    assertEquals(Set.of(), d.check(4 * S));
    assertEquals(Set.of(W), d.check(6 * S));
    assertTrue(d.isFlagged(W));
    assertFalse(d.isFlagged(V));
    d.storedSeen(W);
    assertFalse(d.isFlagged(W));
    assertEquals(Set.of(), d.check(100 * S));
  }
}
