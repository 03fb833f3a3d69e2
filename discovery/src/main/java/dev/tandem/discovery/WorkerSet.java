package dev.tandem.discovery;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One watch's view of the registry, turning whole snapshots and single changes into {@link
 * WorkerSetListener} calls. A backend feeds it from its one watch thread.
 *
 * <p>Not thread-safe: owned by the watch's thread; {@link #snapshot()} may be read from any thread.
 */
final class WorkerSet {
  private static final Logger log = LoggerFactory.getLogger(WorkerSet.class);

  private final WorkerSetListener listener;
  private final Map<String, WorkerRecord> workers = new HashMap<>();
  private volatile Map<String, WorkerRecord> snapshot = Map.of();

  WorkerSet(WorkerSetListener listener) {
    this.listener = listener;
  }

  /** Makes the set exactly {@code now}, telling the listener what left and what came. */
  void replaceAll(Map<String, WorkerRecord> now) {
    for (var it = workers.entrySet().iterator(); it.hasNext(); ) {
      var e = it.next();
      if (!Objects.equals(now.get(e.getKey()), e.getValue())) {
        it.remove();
        notifyRemoved(e.getValue());
      }
    }
    now.forEach((id, record) -> {
      if (!workers.containsKey(id)) {
        workers.put(id, record);
        notifyAdded(record);
      }
    });
    snapshot = Map.copyOf(workers);
  }

  void put(WorkerRecord record) {
    WorkerRecord old = workers.get(record.workerId());
    if (record.equals(old)) {
      return;
    }
    if (old != null) {
      notifyRemoved(old);
    }
    workers.put(record.workerId(), record);
    notifyAdded(record);
    snapshot = Map.copyOf(workers);
  }

  void remove(String workerId) {
    WorkerRecord old = workers.remove(workerId);
    if (old != null) {
      notifyRemoved(old);
      snapshot = Map.copyOf(workers);
    }
  }

  private void notifyAdded(WorkerRecord record) {
    try {
      listener.added(record);
    } catch (RuntimeException e) {
      log.error("discovery listener failed on worker {} joining", record.workerId(), e);
    }
  }

  private void notifyRemoved(WorkerRecord record) {
    try {
      listener.removed(record);
    } catch (RuntimeException e) {
      log.error("discovery listener failed on worker {} leaving", record.workerId(), e);
    }
  }

  Map<String, WorkerRecord> snapshot() {
    return snapshot;
  }
}
