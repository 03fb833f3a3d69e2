package dev.tandem.router;

import dev.tandem.common.WorkerId;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Notices a worker that serves requests but publishes no KV events — Dynamo's known silent failure,
 * where the index stays empty for that worker and routing quietly falls back to chance.
 *
 * <p>When the router sends a worker a prompt with blocks it does not cache, the worker must
 * publish stored events soon after. If none arrive within the window, the worker is flagged
 * (metrics, health, and approximate routing for it) until its events resume.
 *
 * <p>Thread-safe (synchronized); times are caller-supplied nanoseconds, so tests need no clock.
 */
public final class MissingEventsDetector {
  private final long windowNanos;
  private final Map<WorkerId, Long> waitingSince = new HashMap<>();
  private final Set<WorkerId> flagged = new TreeSet<>((a, b) -> a.value().compareTo(b.value()));

  public MissingEventsDetector(long windowNanos) {
    this.windowNanos = windowNanos;
  }

  /** A request that must store new blocks was routed to {@code worker}. */
  public synchronized void expectStored(WorkerId worker, long nowNanos) {
    waitingSince.putIfAbsent(worker, nowNanos);
  }

  /** {@code worker} published stored events. */
  public synchronized void storedSeen(WorkerId worker) {
    waitingSince.remove(worker);
    flagged.remove(worker);
  }

  /** Flags workers whose expectation is older than the window; returns the flagged set. */
  public synchronized Set<WorkerId> check(long nowNanos) {
    for (var e : waitingSince.entrySet()) {
      if (nowNanos - e.getValue() > windowNanos) {
        flagged.add(e.getKey());
      }
    }
    return Set.copyOf(flagged);
  }

  public synchronized boolean isFlagged(WorkerId worker) {
    return flagged.contains(worker);
  }

  public synchronized void removeWorker(WorkerId worker) {
    waitingSince.remove(worker);
    flagged.remove(worker);
  }

  public long windowNanos() {
    return windowNanos;
  }
}
