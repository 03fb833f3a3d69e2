package dev.tandem.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.KvEvent;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class KvEventLogTest {
  private static KvEvent cleared(long id) {
    return new KvEvent.Cleared(id);
  }

  /** Records what it was sent: batches of event ids, and whether each was a snapshot. */
  private static final class Recorder implements KvEventLog.Subscriber {
    final List<List<Long>> batches = new ArrayList<>();
    final List<Boolean> snapshots = new ArrayList<>();
    boolean wantsMore = true;

    @Override
    public boolean deliver(List<KvEvent> batch, boolean snapshot) {
      batches.add(batch.stream().map(KvEvent::eventId).toList());
      snapshots.add(snapshot);
      return wantsMore;
    }
  }

  @Test
  void aSubscriberAfterARetainedIdGetsTheMissingEventsThenTheLiveStream() {
    KvEventLog log = new KvEventLog(10);
    for (long id = 1; id <= 5; id++) {
      log.accept(cleared(id));
    }
    log.flush();
    Recorder r = new Recorder();
    log.subscribe(3, List.of(cleared(99)), r);
    assertEquals(List.of(List.of(4L, 5L)), r.batches, "replayed, not snapshotted");
    log.accept(cleared(6));
    log.accept(cleared(7));
    log.flush();
    assertEquals(List.of(6L, 7L), r.batches.getLast(), "one batch per flush");
    assertEquals(List.of(false, false), r.snapshots);
  }

  @Test
  void aSubscriberWhoseRangeFellOutOfTheRingGetsTheSnapshot() {
    KvEventLog log = new KvEventLog(3);
    for (long id = 1; id <= 8; id++) {
      log.accept(cleared(id));
    }
    Recorder late = new Recorder();
    log.subscribe(2, List.of(cleared(8)), late);
    assertEquals(List.of(true), late.snapshots, "events 3..5 are gone: snapshot");
    Recorder fresh = new Recorder();
    log.subscribe(0, List.of(), fresh);
    assertEquals(List.of(true), fresh.snapshots, "a new subscriber starts from a snapshot");
    Recorder upToDate = new Recorder();
    log.subscribe(8, List.of(), upToDate);
    assertTrue(upToDate.batches.isEmpty(), "nothing missing, nothing sent");
    assertEquals(3, log.subscriberCount());
  }

  @Test
  void aSubscriberThatDeclinesIsDroppedAndIdsMustBeDense() {
    KvEventLog log = new KvEventLog(3);
    Recorder r = new Recorder();
    log.subscribe(0, List.of(), r);
    r.wantsMore = false;
    log.accept(cleared(1));
    log.flush();
    assertEquals(0, log.subscriberCount());
    assertThrows(IllegalStateException.class, () -> log.accept(cleared(3)));
  }
}
