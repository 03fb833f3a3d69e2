package dev.tandem.worker;

import dev.tandem.common.KvEvent;
import dev.tandem.engine.KvEventSink;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A worker's recent KV events: a bounded ring for replay, and live subscribers that receive each
 * engine step's events as one batch.
 *
 * <p>Threading: events arrive and batches are flushed on the engine loop thread; {@link
 * #subscribe} must run on that thread too (through {@link EngineLoop#call}) so that a replay or
 * snapshot and the live stream that follows it have no gap and no overlap. Methods are
 * synchronized so that tests and metrics may read from other threads.
 */
public final class KvEventLog implements KvEventSink {
  /** Receives batches; returns false once it no longer wants any. */
  public interface Subscriber {
    boolean deliver(List<KvEvent> batch, boolean snapshot);
  }

  private final int capacity;
  private final ArrayDeque<KvEvent> ring = new ArrayDeque<>();
  private final List<KvEvent> pending = new ArrayList<>();
  private final List<Subscriber> subscribers = new CopyOnWriteArrayList<>();
  private long lastEventId;

  public KvEventLog(int capacity) {
    if (capacity <= 0) {
      throw new IllegalArgumentException("event ring capacity must be positive");
    }
    this.capacity = capacity;
  }

  @Override
  public synchronized void accept(KvEvent event) {
    if (event.eventId() != lastEventId + 1) {
      throw new IllegalStateException(
          "event ids must be dense: got " + event.eventId() + " after " + lastEventId);
    }
    lastEventId = event.eventId();
    ring.addLast(event);
    if (ring.size() > capacity) {
      ring.removeFirst();
    }
    pending.add(event);
  }

  /** Sends the events gathered since the last flush to every subscriber, as one batch. */
  public synchronized void flush() {
    if (pending.isEmpty()) {
      return;
    }
    List<KvEvent> batch = List.copyOf(pending);
    pending.clear();
    for (Subscriber s : subscribers) {
      if (!s.deliver(batch, false)) {
        subscribers.remove(s);
      }
    }
  }

  public synchronized long lastEventId() {
    return lastEventId;
  }

  /**
   * Subscribes from {@code afterEventId}: replays the retained events after it, or, when that
   * range is gone (or {@code afterEventId} is 0), sends {@code snapshot} (the engine's cache as
   * events) first. Call on the engine loop thread.
   */
  public synchronized void subscribe(long afterEventId, List<KvEvent> snapshot, Subscriber s) {
    flush();
    long oldestRetained = ring.isEmpty() ? lastEventId + 1 : ring.getFirst().eventId();
    boolean replayable =
        afterEventId > 0 && afterEventId <= lastEventId && afterEventId + 1 >= oldestRetained;
    if (replayable) {
      List<KvEvent> missing = new ArrayList<>();
      for (KvEvent e : ring) {
        if (e.eventId() > afterEventId) {
          missing.add(e);
        }
      }
      if (!missing.isEmpty() && !s.deliver(missing, false)) {
        return;
      }
    } else if (!s.deliver(snapshot, true)) {
      return;
    }
    subscribers.add(s);
  }

  public int subscriberCount() {
    return subscribers.size();
  }
}
