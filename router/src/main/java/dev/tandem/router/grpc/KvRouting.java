package dev.tandem.router.grpc;

import dev.tandem.common.KvEvent;
import dev.tandem.common.WorkerId;
import dev.tandem.router.KvCost;
import dev.tandem.router.KvSelector;
import dev.tandem.router.MissingEventsDetector;
import dev.tandem.router.index.ApproximateIndex;
import dev.tandem.router.index.BlockHashIndex;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The KV-aware half of a router: the event-fed index with one subscription per worker, the
 * approximate index of what the router itself sent where, and the detector of workers whose events
 * do not arrive. With {@code useEvents} off every worker is scored approximately.
 *
 * <p>Thread-safe.
 */
public final class KvRouting implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(KvRouting.class);

  private final BlockHashIndex index = new BlockHashIndex();
  private final ApproximateIndex approximate = ApproximateIndex.withDefaults();
  private final MissingEventsDetector detector;
  private final boolean useEvents;
  private final ScheduledExecutorService timer;
  private final Map<WorkerId, KvEventSubscription> subscriptions = new ConcurrentHashMap<>();
  private final KvSelector selector;

  KvRouting(KvCost cost, double temperature, boolean useEvents, Duration missingEventsWindow, ScheduledExecutorService timer) {
    this.useEvents = useEvents;
    this.timer = timer;
    this.detector = new MissingEventsDetector(missingEventsWindow.toNanos());
    this.selector = new KvSelector(index, approximate, this::scoredApproximately, this::cachedBlocks, this::workingSet, cost, temperature);
    if (useEvents) {
      timer.scheduleAtFixedRate(this::checkEvents, 1, 1, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  private Set<WorkerId> lastFlagged = Set.of();

  private synchronized void checkEvents() {
    Set<WorkerId> flagged = detector.check(System.nanoTime());
    for (WorkerId w : flagged) {
      if (!lastFlagged.contains(w)) {
        log.warn(
            "worker {} was sent prompts that must have stored KV blocks but published no KV events for {} s;"
                + " routing it approximately until its events resume",
            w, missingEventsWindow().toSeconds());
      }
    }
    lastFlagged = flagged;
  }

  KvSelector selector() {
    return selector;
  }

  /**
   * Breaks cost ties: the blocks this router recently sent a worker. Not the event index's count —
   * a worker whose events are missing looks empty there and would attract every new prefix until
   * the detector flags it (the missing-events experiment measured 77 of 84 requests going to it).
   */
  private int cachedBlocks(WorkerId worker) {
    return approximate.blockCount(worker);
  }

  /** The blocks {@code worker} caches: from its events, or what the router sent it when it sends none. */
  private int workingSet(WorkerId worker) {
    return scoredApproximately(worker) ? approximate.blockCount(worker) : index.blockCount(worker);
  }

  /** True while {@code worker} is scored from routing decisions rather than its events. */
  public boolean scoredApproximately(WorkerId worker) {
    return !useEvents || detector.isFlagged(worker);
  }

  void attach(WorkerClient worker) {
    if (!useEvents) {
      return;
    }
    KvEventSubscription s = new KvEventSubscription(worker, timer, index::removeWorker, this::apply);
    subscriptions.put(worker.workerId(), s);
    s.start();
  }

  void detach(WorkerId worker) {
    KvEventSubscription s = subscriptions.remove(worker);
    if (s != null) {
      s.close();
    }
    index.removeWorker(worker);
    approximate.removeWorker(worker);
    detector.removeWorker(worker);
  }

  private void apply(WorkerId worker, List<KvEvent> events) {
    boolean stored = false;
    for (KvEvent e : events) {
      index.apply(worker, e);
      stored |= e instanceof KvEvent.Stored;
    }
    if (stored) {
      if (detector.isFlagged(worker)) {
        log.info("KV events from {} resumed; routing it by events again", worker);
      }
      detector.storedSeen(worker);
    }
  }

  /** Records a routing decision: the approximate index learns it, the detector expects events. */
  void routed(WorkerId worker, long[] blockHashes, int predictedOverlapBlocks) {
    approximate.record(worker, blockHashes);
    if (useEvents && blockHashes.length > predictedOverlapBlocks) {
      detector.expectStored(worker, System.nanoTime());
    }
  }

  /** Workers that were sent new blocks but published no events within the window. */
  public Set<WorkerId> workersWithoutEvents() {
    Set<WorkerId> flagged = detector.check(System.nanoTime());
    return flagged;
  }

  public BlockHashIndex index() {
    return index;
  }

  public boolean usesEvents() {
    return useEvents;
  }

  public Duration missingEventsWindow() {
    return Duration.ofNanos(detector.windowNanos());
  }

  /** Gaps seen across all workers' event streams. */
  public long eventGaps() {
    return subscriptions.values().stream().mapToLong(KvEventSubscription::gaps).sum();
  }

  /** Snapshots applied across all workers' event streams. */
  public long eventSnapshots() {
    return subscriptions.values().stream().mapToLong(KvEventSubscription::snapshots).sum();
  }

  /** The last event id applied for a worker (0 before any). */
  public long lastEventId(WorkerId worker) {
    KvEventSubscription s = subscriptions.get(worker);
    return s == null ? 0 : s.lastEventId();
  }

  @Override
  public void close() {
    subscriptions.values().forEach(KvEventSubscription::close);
  }
}
