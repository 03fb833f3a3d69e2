package dev.tandem.planner.sim;

import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import dev.tandem.planner.Pool;
import dev.tandem.router.index.BlockHashIndex;
import it.unimi.dsi.fastutil.longs.LongLinkedOpenHashSet;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * A simulated worker's life (starting → ready → draining → stopped, with the simulated times
 * that cost worker-seconds) and its prefix cache: an LRU of block ids that publishes stored and
 * removed events to the router's real {@link BlockHashIndex}, as a worker's KV event stream does.
 */
abstract class SimWorker {
  enum State { STARTING, READY, DRAINING, STOPPED }

  final WorkerId id;
  /** Unique per simulator, orders workers of equal load. */
  final int serial;
  final Pool pool;
  final double startedAt;
  double readyAt;
  double stoppedAt = Double.NaN;
  State state;
  /** Position in the pool's least-loaded order; changed only through {@link ClusterSimulator}. */
  long loadKey;
  /** The routing decision that last listed this worker as a candidate. */
  long stamp;
  private final BlockHashIndex index;
  private final LongLinkedOpenHashSet cache = new LongLinkedOpenHashSet(); // least recently used first
  private final int cacheBlocks;
  private long eventId;

  SimWorker(WorkerId id, int serial, Pool pool, double startedAt, double readyAt, BlockHashIndex index, int cacheBlocks) {
    this.id = id;
    this.serial = serial;
    this.pool = pool;
    this.startedAt = startedAt;
    this.readyAt = readyAt;
    this.state = readyAt <= startedAt ? State.READY : State.STARTING;
    this.index = index;
    this.cacheBlocks = Math.max(1, cacheBlocks);
  }

  /** Requests this worker holds: queued, computing or decoding. */
  abstract int inFlight();

  /** The load its pool orders workers by for narrowing (lower is less loaded). */
  abstract long load();

  boolean routable() {
    return state == State.READY;
  }

  /** Leading blocks of {@code hashes} this worker caches (touching them, as a lookup does). */
  int cachedPrefix(long[] hashes) {
    int n = 0;
    while (n < hashes.length && cache.contains(hashes[n])) {
      n++;
    }
    for (int i = 0; i < n; i++) {
      cache.addAndMoveToLast(hashes[i]);
    }
    return n;
  }

  /** Caches {@code hashes} (the new ones published as one stored event), evicting the oldest. */
  void store(long[] hashes) {
    List<KvEvent.StoredBlock> added = null;
    int first = -1;
    for (int i = 0; i < hashes.length; i++) {
      if (cache.addAndMoveToLast(hashes[i])) {
        if (added == null) {
          added = new ArrayList<>();
          first = i;
        }
        added.add(new KvEvent.StoredBlock(hashes[i], hashes[i]));
      }
    }
    if (added != null) {
      OptionalLong parent = first == 0 ? OptionalLong.empty() : OptionalLong.of(hashes[first - 1]);
      index.apply(id, new KvEvent.Stored(++eventId, parent, added, StorageTier.DEVICE));
    }
    int over = cache.size() - cacheBlocks;
    if (over > 0) {
      long[] removed = new long[over];
      for (int i = 0; i < over; i++) {
        removed[i] = cache.removeFirstLong();
      }
      index.apply(id, new KvEvent.Removed(++eventId, removed, StorageTier.DEVICE));
    }
  }

  /** Blocks cached now. */
  int cachedBlocks() {
    return cache.size();
  }

  int cacheCapacity() {
    return cacheBlocks;
  }

  /** Worker-seconds spent by {@code end}. */
  double workerSeconds(double end) {
    double stop = Double.isNaN(stoppedAt) ? end : stoppedAt;
    return Math.max(0, stop - startedAt);
  }
}
