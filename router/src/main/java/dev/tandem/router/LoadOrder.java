package dev.tandem.router;

import dev.tandem.common.WorkerId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * A pool's workers kept in order of load between routing decisions, so that a KV-aware decision
 * over a large fleet ({@link KvSelector#select(RoutingRequest, LoadOrder, java.util.function.Predicate)})
 * prices the workers holding part of the prompt and then walks this order only while a worker
 * could still win, instead of pricing every worker. The order is the cost's {@link
 * KvCost#loadKey}: a number per worker, independent of the request, that a lower bound of its
 * cost grows with. Updating one worker's load is O(log n).
 *
 * <p>Not thread-safe: the owner updates it and decides under one lock.
 */
public final class LoadOrder {
  private final KvCost cost;
  private final int blockSize;
  private final TreeSet<Entry> ordered = new TreeSet<>(LoadOrder::compare);
  private final Map<WorkerId, Entry> byId = new HashMap<>();
  private long serials;
  private int unkeyed;
  private double minPerToken = Double.NaN;
  private double minPerContextToken = Double.NaN;
  private double minPerStep = Double.NaN;
  // The shortest sliding window among ordered workers (0: none slides) and the largest share of
  // sliding layers. A model's, so the same at every report: a worker leaving does not refresh them,
  // which leaves at worst a looser floor (still no more than any worker's) until the next refresh.
  private int minWindow;
  private double maxSlidingShare;
  private boolean minimaStale;

  /** One worker's place: its load and key (NaN: the cost has none for it), and a tie-breaking serial. */
  record Entry(WorkerLoad load, double key, long serial) {}

  private static int compare(Entry a, Entry b) {
    int c = Double.compare(a.key(), b.key());
    return c != 0 ? c : Long.compare(a.serial(), b.serial());
  }

  /** Orders workers by {@code cost}'s load key; {@code blockSize} is the pool's KV block size in tokens. */
  public LoadOrder(KvCost cost, int blockSize) {
    this.cost = cost;
    this.blockSize = blockSize;
  }

  /** Adds a worker, or moves it to where its new load puts it. */
  public void put(WorkerLoad load) {
    Entry old = byId.get(load.workerId());
    if (old != null) {
      detach(old);
    }
    double key = cost.loadKey(load, blockSize);
    Entry e = new Entry(load, key, old != null ? old.serial() : ++serials);
    byId.put(load.workerId(), e);
    if (Double.isNaN(key)) {
      unkeyed++;
    } else {
      ordered.add(e);
      if (!minimaStale) {
        include(load);
      }
    }
  }

  /** Forgets a worker (gone from the pool). */
  public void remove(WorkerId worker) {
    Entry old = byId.remove(worker);
    if (old != null) {
      detach(old);
    }
  }

  private void detach(Entry e) {
    if (Double.isNaN(e.key())) {
      unkeyed--;
      return;
    }
    ordered.remove(e);
    markStaleIfMinimum(e.load);
  }

  /** A worker's load as last put, or null. */
  public WorkerLoad get(WorkerId worker) {
    Entry e = byId.get(worker);
    return e == null ? null : e.load();
  }

  public int size() {
    return byId.size();
  }

  /** Whether some worker has no load key (the cost cannot order it: every decision must price it). */
  boolean hasUnkeyed() {
    return unkeyed > 0;
  }

  /** Every worker's load, in no particular order (for decisions that price them all). */
  public List<WorkerLoad> loads() {
    List<WorkerLoad> out = new ArrayList<>(byId.size());
    for (Entry e : byId.values()) {
      out.add(e.load());
    }
    return out;
  }

  /** The smallest measured prefill cost per token, per attended token and per step among ordered workers (NaN when none). */
  double minPerToken() {
    refreshMinima();
    return minPerToken;
  }

  double minPerContextToken() {
    refreshMinima();
    return minPerContextToken;
  }

  double minPerStep() {
    refreshMinima();
    return minPerStep;
  }

  /**
   * An attention that attends to no more than any ordered worker's does: the shortest window over
   * the largest share of sliding layers (every layer in full where none slides).
   */
  dev.tandem.common.PrefillCost.Attention leastAttention() {
    refreshMinima();
    return minWindow == 0 ? dev.tandem.common.PrefillCost.Attention.FULL : new dev.tandem.common.PrefillCost.Attention(minWindow, maxSlidingShare);
  }

  private void refreshMinima() {
    if (!minimaStale) {
      return;
    }
    minPerToken = Double.NaN;
    minPerContextToken = Double.NaN;
    minPerStep = Double.NaN;
    minWindow = 0;
    maxSlidingShare = 0;
    for (Entry e : ordered) {
      include(e.load());
    }
    minimaStale = false;
  }

  private void include(WorkerLoad load) {
    var c = load.speed().prefillCost();
    minPerToken = Double.isNaN(minPerToken) ? c.perToken() : Math.min(minPerToken, c.perToken());
    minPerContextToken = Double.isNaN(minPerContextToken) ? c.perContextToken() : Math.min(minPerContextToken, c.perContextToken());
    minPerStep = Double.isNaN(minPerStep) ? c.perStep() : Math.min(minPerStep, c.perStep());
    if (c.attention().window() > 0) {
      minWindow = minWindow == 0 ? c.attention().window() : Math.min(minWindow, c.attention().window());
      maxSlidingShare = Math.max(maxSlidingShare, c.attention().slidingShare());
    }
  }

  /** The ordered workers' loads and keys, smallest key first. */
  Iterator<Entry> ascending() {
    return ordered.iterator();
  }

  /** Marks the minima for recomputing when a worker that may hold one leaves the order. */
  private void markStaleIfMinimum(WorkerLoad load) {
    if (!minimaStale
        && (load.speed().prefillCost().perToken() <= minPerToken
            || load.speed().prefillCost().perContextToken() <= minPerContextToken
            || load.speed().prefillCost().perStep() <= minPerStep)) {
      minimaStale = true;
    }
  }
}
