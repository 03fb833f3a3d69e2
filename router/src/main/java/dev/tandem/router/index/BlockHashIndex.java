package dev.tandem.router.index;

import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import it.unimi.dsi.fastutil.ints.Int2IntOpenHashMap;
import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import it.unimi.dsi.fastutil.longs.LongIterator;
import it.unimi.dsi.fastutil.longs.LongOpenHashSet;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The router's index of cached KV blocks, a hash table (not a radix tree): sequence hash → the
 * workers holding that block, with
 * the tier. A sequence hash stands for its whole prefix (it chains every earlier block), so the
 * prefix tree is implicit: a request matches a worker for as many leading blocks as the worker
 * holds without a gap. Stored, removed and cleared events apply in event order per worker.
 *
 * <p>Counted, not only logged: stored events whose parent the worker was not known to hold, and
 * removals of blocks the worker was not known to hold.
 *
 * <p>Storage is primitive (fastutil open-addressing tables keyed by the 64-bit hash; workers as
 * small ints), so a cached block costs one table entry plus one entry in its worker's set.
 *
 * <p>Threading: events are applied under a write lock (one event stream per worker, any number of
 * workers); lookups take a read lock and may run concurrently.
 */
public final class BlockHashIndex implements PrefixIndex {

  /** Per-thread position tables for {@link #overlaps} (readers run concurrently). */
  private static final ThreadLocal<int[][]> SCRATCH = ThreadLocal.withInitial(() -> new int[][] {new int[0], new int[0]});

  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final Long2ObjectOpenHashMap<Holders> blocks = new Long2ObjectOpenHashMap<>();
  private final Map<WorkerId, Integer> workerIndex = new HashMap<>();
  /** Each worker's block count, readable without the lock (a routing decision reads one per candidate). */
  private final Map<WorkerId, AtomicInteger> counts = new ConcurrentHashMap<>();
  private WorkerId[] workers = new WorkerId[16];
  private LongOpenHashSet[] byWorker = new LongOpenHashSet[16];
  private final AtomicLong unknownParents = new AtomicLong();
  private final AtomicLong unknownRemovals = new AtomicLong();
  private final AtomicLong eventsApplied = new AtomicLong();

  /**
   * The workers holding one block, as worker indices with their tier; usually one or two, so a
   * scan finds one. A block many workers hold (a shared system prompt across a big fleet) also
   * keeps a worker → slot table, so that adding and removing a holder stay O(1).
   */
  private static final class Holders {
    private static final int TABLE_FROM = 16;
    int[] workers = new int[1];
    byte[] tiers = new byte[1];
    int size;
    Int2IntOpenHashMap slots; // worker → index in workers, once size reaches TABLE_FROM

    int indexOf(int w) {
      if (slots != null) {
        return slots.get(w);
      }
      for (int i = 0; i < size; i++) {
        if (workers[i] == w) {
          return i;
        }
      }
      return -1;
    }

    void put(int w, StorageTier tier) {
      int i = indexOf(w);
      if (i >= 0) {
        tiers[i] = (byte) tier.ordinal();
        return;
      }
      if (size == workers.length) {
        workers = java.util.Arrays.copyOf(workers, size * 2);
        tiers = java.util.Arrays.copyOf(tiers, size * 2);
      }
      workers[size] = w;
      tiers[size] = (byte) tier.ordinal();
      if (slots != null) {
        slots.put(w, size);
      } else if (size + 1 >= TABLE_FROM) {
        slots = new Int2IntOpenHashMap(2 * TABLE_FROM);
        slots.defaultReturnValue(-1);
        for (int j = 0; j <= size; j++) {
          slots.put(workers[j], j);
        }
      }
      size++;
    }

    boolean remove(int w) {
      int i = indexOf(w);
      if (i < 0) {
        return false;
      }
      size--;
      workers[i] = workers[size];
      tiers[i] = tiers[size];
      if (slots != null) {
        slots.remove(w);
        if (i < size) {
          slots.put(workers[i], i);
        }
      }
      return true;
    }
  }

  private int indexOf(WorkerId worker) {
    Integer i = workerIndex.get(worker);
    if (i != null) {
      return i;
    }
    int n = workerIndex.size();
    if (n == workers.length) {
      workers = java.util.Arrays.copyOf(workers, n * 2);
      byWorker = java.util.Arrays.copyOf(byWorker, n * 2);
    }
    workers[n] = worker;
    byWorker[n] = new LongOpenHashSet();
    counts.put(worker, new AtomicInteger());
    workerIndex.put(worker, n);
    return n;
  }

  /** Applies one event of {@code worker}'s stream. */
  public void apply(WorkerId worker, KvEvent event) {
    lock.writeLock().lock();
    try {
      eventsApplied.incrementAndGet();
      int w = indexOf(worker);
      LongOpenHashSet mine = byWorker[w];
      switch (event) {
        case KvEvent.Stored s -> {
          if (s.parentHash().isPresent() && !mine.contains(s.parentHash().getAsLong())) {
            unknownParents.incrementAndGet();
          }
          for (KvEvent.StoredBlock b : s.blocks()) {
            Holders holders = blocks.get(b.sequenceHash());
            if (holders == null) {
              holders = new Holders();
              blocks.put(b.sequenceHash(), holders);
            }
            holders.put(w, s.tier());
            mine.add(b.sequenceHash());
          }
        }
        case KvEvent.Removed r -> {
          for (long h : r.sequenceHashes()) {
            Holders holders = blocks.get(h);
            if (holders == null || !holders.remove(w)) {
              unknownRemovals.incrementAndGet();
              continue;
            }
            if (holders.size == 0) {
              blocks.remove(h);
            }
            mine.remove(h);
          }
        }
        case KvEvent.Cleared c -> dropWorker(w);
      }
      counts.get(worker).set(byWorker[w].size());
    } finally {
      lock.writeLock().unlock();
    }
  }

  /** Forgets everything a worker held (it left, or its stream restarts from a snapshot). */
  public void removeWorker(WorkerId worker) {
    lock.writeLock().lock();
    try {
      Integer w = workerIndex.get(worker);
      if (w != null) {
        dropWorker(w);
      }
    } finally {
      lock.writeLock().unlock();
    }
  }

  private void dropWorker(int w) {
    LongOpenHashSet mine = byWorker[w];
    for (LongIterator it = mine.iterator(); it.hasNext(); ) {
      long h = it.nextLong();
      Holders holders = blocks.get(h);
      if (holders != null && holders.remove(w) && holders.size == 0) {
        blocks.remove(h);
      }
    }
    byWorker[w] = new LongOpenHashSet();
    counts.get(workers[w]).set(0);
  }

  @Override
  public Map<WorkerId, Overlap> overlaps(long[] sequenceHashes) {
    if (sequenceHashes.length == 0) {
      return Map.of();
    }
    lock.readLock().lock();
    try {
      Holders first = blocks.get(sequenceHashes[0]);
      if (first == null) {
        return Map.of();
      }
      // The workers still matching, with their per-tier counts; compacted as workers drop out.
      int n = first.size;
      int[] active = java.util.Arrays.copyOf(first.workers, n);
      int[][] counts = new int[n][3];
      for (int i = 0; i < n; i++) {
        counts[i][first.tiers[i]]++;
      }
      int[] depthOf = new int[n]; // index into counts for each active slot
      for (int i = 0; i < n; i++) {
        depthOf[i] = i;
      }
      int live = n;
      // A block many workers hold is looked up through a position table (this call's, indexed by
      // worker), so that a popular prefix costs O(holders + live) per block, not O(holders × live).
      int[][] scratch = null;
      int[] stampOf = null;
      int[] slotOf = null;
      for (int b = 1; b < sequenceHashes.length && live > 0; b++) {
        Holders holders = blocks.get(sequenceHashes[b]);
        boolean table = holders != null && holders.size > 8 && live > 2;
        if (table) {
          if (scratch == null) {
            scratch = SCRATCH.get();
            if (scratch[0].length < workers.length) {
              scratch[0] = new int[workers.length];
              scratch[1] = new int[workers.length];
            }
            stampOf = scratch[0];
            slotOf = scratch[1];
            java.util.Arrays.fill(stampOf, 0, workers.length, 0);
          }
          for (int j = 0; j < holders.size; j++) {
            stampOf[holders.workers[j]] = b;
            slotOf[holders.workers[j]] = j;
          }
        }
        int kept = 0;
        for (int i = 0; i < live; i++) {
          int at = holders == null ? -1
              : table ? (stampOf[active[i]] == b ? slotOf[active[i]] : -1) : holders.indexOf(active[i]);
          if (at >= 0) {
            counts[depthOf[i]][holders.tiers[at]]++;
            active[kept] = active[i];
            depthOf[kept] = depthOf[i];
            kept++;
          }
        }
        live = kept;
      }
      Map<WorkerId, Overlap> result = new HashMap<>(n * 2);
      for (int i = 0; i < n; i++) {
        result.put(workers[first.workers[i]], new Overlap(counts[i][0], counts[i][1], counts[i][2]));
      }
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

  /** Blocks the index believes {@code worker} holds (as of the last event applied; no lock taken). */
  public int blockCount(WorkerId worker) {
    AtomicInteger c = counts.get(worker);
    return c == null ? 0 : c.get();
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
