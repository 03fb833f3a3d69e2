package dev.tandem.router.index;

import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The router's index of cached KV blocks: sequence hash → the workers holding that block, with
 * the tier. A sequence hash stands for its whole prefix (it chains every earlier block), so the
 * prefix tree is implicit: a request matches a worker for as many leading blocks as the worker
 * holds without a gap. Stored, removed and cleared events apply in event order per worker.
 *
 * <p>Counted, not only logged: stored events whose parent the worker was not known to hold, and
 * removals of blocks the worker was not known to hold.
 *
 * <p>Threading: events are applied under a write lock (one event stream per worker, any number of
 * workers); lookups take a read lock and may run concurrently.
 */
public final class RadixIndex implements PrefixIndex {
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final Map<Long, Holders> blocks = new HashMap<>();
  private final Map<WorkerId, Set<Long>> byWorker = new HashMap<>();
  private final AtomicLong unknownParents = new AtomicLong();
  private final AtomicLong unknownRemovals = new AtomicLong();
  private final AtomicLong eventsApplied = new AtomicLong();

  /** The workers holding one block; small, so arrays. */
  private static final class Holders {
    WorkerId[] workers = new WorkerId[2];
    StorageTier[] tiers = new StorageTier[2];
    int size;

    int indexOf(WorkerId w) {
      for (int i = 0; i < size; i++) {
        if (workers[i].equals(w)) {
          return i;
        }
      }
      return -1;
    }

    void put(WorkerId w, StorageTier tier) {
      int i = indexOf(w);
      if (i >= 0) {
        tiers[i] = tier;
        return;
      }
      if (size == workers.length) {
        workers = java.util.Arrays.copyOf(workers, size * 2);
        tiers = java.util.Arrays.copyOf(tiers, size * 2);
      }
      workers[size] = w;
      tiers[size++] = tier;
    }

    boolean remove(WorkerId w) {
      int i = indexOf(w);
      if (i < 0) {
        return false;
      }
      size--;
      workers[i] = workers[size];
      tiers[i] = tiers[size];
      workers[size] = null;
      tiers[size] = null;
      return true;
    }
  }

  /** Applies one event of {@code worker}'s stream. */
  public void apply(WorkerId worker, KvEvent event) {
    lock.writeLock().lock();
    try {
      eventsApplied.incrementAndGet();
      switch (event) {
        case KvEvent.Stored s -> {
          Set<Long> mine = byWorker.computeIfAbsent(worker, k -> new HashSet<>());
          if (s.parentHash().isPresent() && !mine.contains(s.parentHash().getAsLong())) {
            unknownParents.incrementAndGet();
          }
          for (KvEvent.StoredBlock b : s.blocks()) {
            blocks.computeIfAbsent(b.sequenceHash(), k -> new Holders()).put(worker, s.tier());
            mine.add(b.sequenceHash());
          }
        }
        case KvEvent.Removed r -> {
          Set<Long> mine = byWorker.get(worker);
          for (long h : r.sequenceHashes()) {
            Holders holders = blocks.get(h);
            if (holders == null || !holders.remove(worker)) {
              unknownRemovals.incrementAndGet();
              continue;
            }
            if (holders.size == 0) {
              blocks.remove(h);
            }
            if (mine != null) {
              mine.remove(h);
            }
          }
        }
        case KvEvent.Cleared c -> dropWorker(worker);
      }
    } finally {
      lock.writeLock().unlock();
    }
  }

  /** Forgets everything a worker held (it left, or its stream restarts from a snapshot). */
  public void removeWorker(WorkerId worker) {
    lock.writeLock().lock();
    try {
      dropWorker(worker);
    } finally {
      lock.writeLock().unlock();
    }
  }

  private void dropWorker(WorkerId worker) {
    Set<Long> mine = byWorker.remove(worker);
    if (mine == null) {
      return;
    }
    for (long h : mine) {
      Holders holders = blocks.get(h);
      if (holders != null && holders.remove(worker) && holders.size == 0) {
        blocks.remove(h);
      }
    }
  }

  @Override
  public Map<WorkerId, Overlap> overlaps(long[] sequenceHashes) {
    Map<WorkerId, Overlap> result = new HashMap<>();
    if (sequenceHashes.length == 0) {
      return result;
    }
    lock.readLock().lock();
    try {
      Holders first = blocks.get(sequenceHashes[0]);
      if (first == null) {
        return result;
      }
      // Workers still matching, with their per-tier counts so far.
      List<WorkerId> active = new ArrayList<>();
      Map<WorkerId, int[]> counts = new HashMap<>();
      for (int i = 0; i < first.size; i++) {
        active.add(first.workers[i]);
        int[] c = new int[3];
        c[first.tiers[i].ordinal()]++;
        counts.put(first.workers[i], c);
      }
      for (int b = 1; b < sequenceHashes.length && !active.isEmpty(); b++) {
        Holders holders = blocks.get(sequenceHashes[b]);
        for (var it = active.iterator(); it.hasNext(); ) {
          WorkerId w = it.next();
          int at = holders == null ? -1 : holders.indexOf(w);
          if (at < 0) {
            it.remove();
          } else {
            counts.get(w)[holders.tiers[at].ordinal()]++;
          }
        }
      }
      counts.forEach((w, c) -> result.put(w, new Overlap(c[0], c[1], c[2])));
      return result;
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Distinct cached blocks across all workers. */
  public int blockCount() {
    lock.readLock().lock();
    try {
      return blocks.size();
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Blocks the index believes {@code worker} holds. */
  public int blockCount(WorkerId worker) {
    lock.readLock().lock();
    try {
      Set<Long> mine = byWorker.get(worker);
      return mine == null ? 0 : mine.size();
    } finally {
      lock.readLock().unlock();
    }
  }

  public long unknownParents() {
    return unknownParents.get();
  }

  public long unknownRemovals() {
    return unknownRemovals.get();
  }

  public long eventsApplied() {
    return eventsApplied.get();
  }
}
