package dev.tandem.router;

import dev.tandem.common.KvEvent;
import java.util.ArrayList;
import java.util.List;

/**
 * Orders one worker's KV event stream for the index: drops duplicates, applies events in id order,
 * notices a gap (the caller then resubscribes from {@link #lastEventId()}, and the worker replays
 * the range or sends a snapshot), and resets on a snapshot.
 *
 * <p>Not thread-safe: one per worker stream, fed from that stream's callbacks.
 */
public final class KvEventSequencer {
  /** What to do with a batch: apply these events (after clearing the worker if reset), and whether a gap was seen. */
  public record Decision(boolean reset, List<KvEvent> apply, boolean gap) {}

  private long lastEventId;

  public long lastEventId() {
    return lastEventId;
  }

  public Decision accept(List<KvEvent> batch, boolean snapshot) {
    if (snapshot) {
      long last = lastEventId;
      for (KvEvent e : batch) {
        last = e.eventId();
      }
      lastEventId = batch.isEmpty() ? lastEventId : last;
      return new Decision(true, batch, false);
    }
    List<KvEvent> apply = new ArrayList<>();
    for (KvEvent e : batch) {
      if (e.eventId() <= lastEventId) {
        continue; // already applied (a replay overlapping the live stream)
      }
      if (e.eventId() != lastEventId + 1) {
        return new Decision(false, apply, true);
      }
      apply.add(e);
      lastEventId = e.eventId();
    }
    return new Decision(false, apply, false);
  }
}
