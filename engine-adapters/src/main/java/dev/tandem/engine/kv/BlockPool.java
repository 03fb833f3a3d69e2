package dev.tandem.engine.kv;

import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.engine.KvEventSink;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * A paged KV block pool: fixed-size blocks with reference counts, prefix reuse by sequence hash,
 * and LRU eviction of cached blocks nobody references. Every block that becomes cached emits a
 * stored event, every eviction a removed event.
 *
 * <p>Block ids are indices {@code 0..totalBlocks-1}; the memory behind them belongs to the engine.
 * A block is in exactly one state: <em>free</em> (unreferenced, holds nothing reusable),
 * <em>evictable</em> (unreferenced, cached under its sequence hash, reusable until evicted) or
 * <em>in use</em> (referenced by one or more sequences).
 *
 * <p>Threading: owned by the engine thread; not thread-safe.
 */
public final class BlockPool {
  private static final long NO_HASH = 0L;

  private final int blockSize;
  private final int totalBlocks;
  private final int[] refCount;
  private final long[] hashOf; // sequence hash while cached
  private final long[] parentOf; // parent sequence hash while cached
  private final boolean[] hasParent;
  private final long[] localHashOf;
  private final long[] saltOf; // while cached: its LoRA adapter's salt (0: none), which forget() reads
  private final boolean[] cached;
  private final Map<Long, Integer> blockByHash = new LinkedHashMap<>(); // insertion order: parents first
  private final ArrayDeque<Integer> free = new ArrayDeque<>();
  private final LinkedHashSet<Integer> evictable = new LinkedHashSet<>(); // oldest first
  private KvEventSink sink = KvEventSink.NONE;
  private long lastEventId;

  public BlockPool(int totalBlocks, int blockSize) {
    if (totalBlocks <= 0 || blockSize <= 0) {
      throw new IllegalArgumentException(
          "totalBlocks and blockSize must be positive: " + totalBlocks + ", " + blockSize);
    }
    this.blockSize = blockSize;
    this.totalBlocks = totalBlocks;
    this.refCount = new int[totalBlocks];
    this.hashOf = new long[totalBlocks];
    this.parentOf = new long[totalBlocks];
    this.hasParent = new boolean[totalBlocks];
    this.localHashOf = new long[totalBlocks];
    this.saltOf = new long[totalBlocks];
    this.cached = new boolean[totalBlocks];
    for (int i = 0; i < totalBlocks; i++) {
      free.add(i);
    }
  }

  public void setEventSink(KvEventSink sink) {
    this.sink = sink == null ? KvEventSink.NONE : sink;
  }

  public int blockSize() {
    return blockSize;
  }

  public int totalBlocks() {
    return totalBlocks;
  }

  /** Blocks referenced by at least one sequence. */
  public int usedBlocks() {
    return totalBlocks - free.size() - evictable.size();
  }

  /** Blocks an allocation could take now: free ones plus evictable cached ones. */
  public int availableBlocks() {
    return free.size() + evictable.size();
  }

  /** Blocks holding a cached prefix (in use or evictable). */
  public int cachedBlocks() {
    return blockByHash.size();
  }

  public long lastEventId() {
    return lastEventId;
  }

  /** How many leading hashes of {@code sequenceHashes} are cached here. */
  public int cachedPrefixLength(long[] sequenceHashes) {
    int n = 0;
    while (n < sequenceHashes.length && blockByHash.containsKey(sequenceHashes[n])) {
      n++;
    }
    return n;
  }

  /** How many of the first {@code count} hashes' cached blocks nobody references now. */
  public int evictableAmong(long[] sequenceHashes, int count) {
    int n = 0;
    for (int i = 0; i < count; i++) {
      Integer id = blockByHash.get(sequenceHashes[i]);
      if (id != null && refCount[id] == 0) {
        n++;
      }
    }
    return n;
  }

  /**
   * Takes a reference on the cached blocks of the first {@code count} hashes, which must all be
   * cached ({@link #cachedPrefixLength}). Returns their block ids in order.
   */
  public int[] acquireCached(long[] sequenceHashes, int count) {
    int[] ids = new int[count];
    for (int i = 0; i < count; i++) {
      Integer id = blockByHash.get(sequenceHashes[i]);
      if (id == null) {
        throw new IllegalStateException("block " + i + " of the prefix is not cached");
      }
      if (refCount[id]++ == 0) {
        evictable.remove(id);
      }
      ids[i] = id;
    }
    return ids;
  }

  /**
   * Takes a block for new KV: a free one, else the least recently used evictable one (which emits
   * a removed event). Returns -1 when every block is in use.
   */
  public int allocate() {
    Integer id = free.poll();
    if (id == null) {
      var it = evictable.iterator();
      if (!it.hasNext()) {
        return -1;
      }
      id = it.next();
      it.remove();
      uncache(id);
      emit(new KvEvent.Removed(++lastEventId, new long[] {hashOf[id]}, StorageTier.DEVICE));
    }
    refCount[id] = 1;
    return id;
  }

  /**
   * Marks full blocks as cached under their hashes: {@code blockIds[i]} holds the block whose
   * sequence hash is {@code sequenceHashes[i]}, for i in [from, to). The parent of block {@code
   * from} is {@code sequenceHashes[from-1]} (none at 0). A hash already cached by another block
   * leaves this block uncached (a duplicate). Emits one stored event per contiguous run. {@code
   * salt} is the request's LoRA adapter's ({@code BlockHasher.salt(String)}, 0 for none), which
   * {@link #forget} matches; a cache salt changes the hashes, not this.
   */
  public void cache(int[] blockIds, long[] sequenceHashes, long[] localHashes, int from, int to, long salt) {
    List<KvEvent.StoredBlock> run = new ArrayList<>();
    int runStart = from;
    for (int i = from; i < to; i++) {
      int id = blockIds[i];
      long hash = sequenceHashes[i];
      // Already cached (this block, or a duplicate elsewhere): ends the current run.
      if (cached[id] || blockByHash.containsKey(hash)) {
        flush(run, sequenceHashes, runStart);
        runStart = i + 1;
        continue;
      }
      cached[id] = true;
      hashOf[id] = hash;
      localHashOf[id] = localHashes[i];
      saltOf[id] = salt;
      hasParent[id] = i > 0;
      parentOf[id] = i > 0 ? sequenceHashes[i - 1] : NO_HASH;
      blockByHash.put(hash, id);
      run.add(new KvEvent.StoredBlock(hash, localHashes[i]));
    }
    flush(run, sequenceHashes, runStart);
  }

  /**
   * The blocks whose contents matter: cached (a prefix another request may reuse) or referenced (a
   * running sequence's, or one held for a pull). Every other block is free, and the engine writes a
   * free block before it reads it.
   */
  public BitSet holdingData() {
    BitSet holding = new BitSet(totalBlocks);
    for (int id = 0; id < totalBlocks; id++) {
      if (cached[id] || refCount[id] > 0) {
        holding.set(id);
      }
    }
    return holding;
  }

  /** Drops one reference; at zero the block becomes evictable (if cached) or free. */
  public void release(int blockId) {
    if (refCount[blockId] <= 0) {
      throw new IllegalStateException("block " + blockId + " released more often than acquired");
    }
    if (--refCount[blockId] == 0) {
      if (cached[blockId]) {
        evictable.add(blockId);
      } else {
        free.push(blockId);
      }
    }
  }

  /**
   * Releases a sequence's blocks, last first, so that the tail of a prefix is evicted before its
   * head.
   */
  public void releaseAll(int[] blockIds, int count) {
    for (int i = count - 1; i >= 0; i--) {
      release(blockIds[i]);
    }
  }

  /** Forgets every cached prefix that nobody references and emits a cleared event. */
  public void clearCache() {
    for (Integer id : List.copyOf(evictable)) {
      uncache(id);
      evictable.remove(id);
      free.push(id);
    }
    emit(new KvEvent.Cleared(++lastEventId));
  }

  /**
   * Forgets every cached block computed under the adapter of {@code salt} (an unloaded LoRA adapter's:
   * its KV may not serve an adapter loaded later under the same name), with one removed event for
   * them all; the blocks become free.
   *
   * @return how many blocks it forgot
   * @throws IllegalStateException if a sequence still references one of them (nothing is forgotten then)
   */
  public int forget(long salt) {
    List<Integer> ids = new ArrayList<>();
    for (int id : blockByHash.values()) {
      if (saltOf[id] == salt) {
        if (refCount[id] > 0) {
          throw new IllegalStateException("block " + id + " of salt " + Long.toHexString(salt) + " is still in use");
        }
        ids.add(id);
      }
    }
    if (ids.isEmpty()) {
      return 0;
    }
    long[] hashes = new long[ids.size()];
    for (int i = 0; i < hashes.length; i++) {
      int id = ids.get(i);
      hashes[i] = hashOf[id];
      uncache(id);
      evictable.remove(id);
      free.push(id);
    }
    emit(new KvEvent.Removed(++lastEventId, hashes, StorageTier.DEVICE));
    return hashes.length;
  }

  /**
   * The cache as events that rebuild it from nothing: cleared, then one stored event per cached
   * block (parents first where the parent is still cached), all with the current event id.
   */
  public List<KvEvent> snapshot() {
    List<KvEvent> events = new ArrayList<>();
    events.add(new KvEvent.Cleared(lastEventId));
    for (int id : blockByHash.values()) {
      events.add(
          new KvEvent.Stored(
              lastEventId,
              hasParent[id] ? OptionalLong.of(parentOf[id]) : OptionalLong.empty(),
              List.of(new KvEvent.StoredBlock(hashOf[id], localHashOf[id])),
              StorageTier.DEVICE));
    }
    return events;
  }

  private void flush(List<KvEvent.StoredBlock> run, long[] sequenceHashes, int runStart) {
    if (run.isEmpty()) {
      return;
    }
    OptionalLong parent =
        runStart > 0 ? OptionalLong.of(sequenceHashes[runStart - 1]) : OptionalLong.empty();
    emit(new KvEvent.Stored(++lastEventId, parent, run, StorageTier.DEVICE));
    run.clear();
  }

  private void uncache(int id) {
    if (cached[id]) {
      blockByHash.remove(hashOf[id]);
      cached[id] = false;
    }
  }

  private void emit(KvEvent event) {
    sink.accept(event);
  }
}
