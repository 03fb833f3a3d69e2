package dev.tandem.engine.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.KvEvent;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class BlockPoolTest {
  private final List<KvEvent> events = new ArrayList<>();

  private BlockPool pool(int blocks) {
    BlockPool pool = new BlockPool(blocks, 4);
    pool.setEventSink(events::add);
    return pool;
  }

  private static int[] allocate(BlockPool pool, int n) {
    int[] ids = new int[n];
    for (int i = 0; i < n; i++) {
      ids[i] = pool.allocate();
    }
    return ids;
  }

  @Test
  void cachedPrefixIsReusedAndReportedOnce() {
    BlockPool pool = pool(8);
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    long[] local = BlockHasher.localHashes(tokens, 4);
    long[] seq = BlockHasher.chainAll(local);
    int[] ids = allocate(pool, 2);
    pool.cache(ids, seq, local, 0, 2, BlockHasher.NO_SALT);

    assertEquals(1, events.size());
    KvEvent.Stored stored = assertInstanceOf(KvEvent.Stored.class, events.getFirst());
    assertEquals(OptionalLong.empty(), stored.parentHash());
    assertEquals(List.of(new KvEvent.StoredBlock(seq[0], local[0]), new KvEvent.StoredBlock(seq[1], local[1])), stored.blocks());
    assertEquals(1, stored.eventId());

    assertEquals(2, pool.cachedPrefixLength(seq));
    int[] again = pool.acquireCached(seq, 2);
    assertArrayEquals(ids, again);
    assertEquals(2, pool.usedBlocks());
    pool.releaseAll(ids, 2);
    pool.releaseAll(again, 2);
    assertEquals(0, pool.usedBlocks());
    assertEquals(8, pool.availableBlocks());
    assertEquals(2, pool.cachedBlocks(), "released blocks stay cached until evicted");
  }

  @Test
  void theBlocksHoldingDataAreTheCachedAndTheReferencedOnes() {
    BlockPool pool = pool(8);
    long[] local = BlockHasher.localHashes(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, 4);
    int[] cachedIds = allocate(pool, 2);
    pool.cache(cachedIds, BlockHasher.chainAll(local), local, 0, 2, BlockHasher.NO_SALT);
    pool.releaseAll(cachedIds, 2); // evictable: still holds a prefix
    int held = pool.allocate(); // referenced, not cached
    int freed = pool.allocate();
    pool.release(freed);
    BitSet expected = new BitSet();
    expected.set(cachedIds[0]);
    expected.set(cachedIds[1]);
    expected.set(held);
    assertEquals(expected, pool.holdingData());
    pool.clearCache();
    pool.release(held);
    assertEquals(new BitSet(), pool.holdingData(), "nothing once the cache is cleared and the hold released");
  }

  @Test
  void forgettingASaltDropsOnlyTheBlocksCachedUnderItAndRefusesWhileOneIsInUse() {
    BlockPool pool = pool(8);
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    long[] local = BlockHasher.localHashes(tokens, 4);
    long salt = BlockHasher.salt("sql");
    long[] adapter = BlockHasher.sequenceHashes(tokens, 4, salt);
    long[] base = BlockHasher.chainAll(local);
    int[] a = allocate(pool, 2);
    pool.cache(a, adapter, local, 0, 2, salt);
    int[] b = allocate(pool, 2);
    pool.cache(b, base, local, 0, 2, BlockHasher.NO_SALT);

    var inUse = assertThrows(IllegalStateException.class, () -> pool.forget(salt));
    assertTrue(inUse.getMessage().contains("still in use"), inUse.getMessage());
    assertEquals(2, pool.cachedPrefixLength(adapter), "nothing is forgotten then");
    pool.releaseAll(a, 2);
    pool.releaseAll(b, 2);
    events.clear();

    assertEquals(2, pool.forget(salt));
    assertEquals(0, pool.cachedPrefixLength(adapter));
    assertEquals(2, pool.cachedPrefixLength(base), "the base model's blocks stay");
    KvEvent.Removed removed = assertInstanceOf(KvEvent.Removed.class, events.getFirst());
    assertEquals(java.util.Set.of(adapter[0], adapter[1]), java.util.Set.of(removed.sequenceHashes()[0], removed.sequenceHashes()[1]));
    assertEquals(1, events.size());
    assertEquals(8, pool.availableBlocks());
    assertEquals(0, pool.forget(salt), "nothing left under it: no event");
    assertEquals(1, events.size());
  }

  @Test
  void evictsLeastRecentlyUsedTailFirstAndEmitsRemoved() {
    BlockPool pool = pool(3);
    long[] local = {11, 12, 13};
    long[] seq = BlockHasher.chainAll(local);
    int[] ids = allocate(pool, 3);
    pool.cache(ids, seq, local, 0, 3, BlockHasher.NO_SALT);
    pool.releaseAll(ids, 3); // tail released first, so it is the oldest
    events.clear();

    int fresh = pool.allocate();
    assertEquals(ids[2], fresh);
    KvEvent.Removed removed = assertInstanceOf(KvEvent.Removed.class, events.getFirst());
    assertArrayEquals(new long[] {seq[2]}, removed.sequenceHashes());
    assertEquals(2, pool.cachedPrefixLength(seq));
  }

  @Test
  void referencedBlocksAreNeverEvicted() {
    BlockPool pool = pool(2);
    int[] ids = allocate(pool, 2);
    assertEquals(-1, pool.allocate());
    pool.release(ids[0]);
    assertEquals(ids[0], pool.allocate());
  }

  @Test
  void duplicateHashLeavesSecondBlockUncachedAndSplitsEvents() {
    BlockPool pool = pool(4);
    long[] local = {1, 2};
    long[] seq = BlockHasher.chainAll(local);
    int[] a = allocate(pool, 2);
    pool.cache(a, seq, local, 0, 2, BlockHasher.NO_SALT);
    int[] b = allocate(pool, 2);
    events.clear();
    pool.cache(b, seq, local, 0, 2, BlockHasher.NO_SALT);
    assertEquals(List.of(), events, "no stored event for blocks already cached elsewhere");
    pool.releaseAll(b, 2);
    assertEquals(2, pool.cachedBlocks());
  }

  @Test
  void doubleReleaseIsAnError() {
    BlockPool pool = pool(1);
    int id = pool.allocate();
    pool.release(id);
    assertThrows(IllegalStateException.class, () -> pool.release(id));
  }

  @Test
  void snapshotRebuildsCacheWithParentsFirst() {
    BlockPool pool = pool(4);
    long[] local = {7, 8, 9};
    long[] seq = BlockHasher.chainAll(local);
    int[] ids = allocate(pool, 3);
    pool.cache(ids, seq, local, 0, 1, BlockHasher.NO_SALT);
    pool.cache(ids, seq, local, 1, 3, BlockHasher.NO_SALT);
    List<KvEvent> snapshot = pool.snapshot();
    assertInstanceOf(KvEvent.Cleared.class, snapshot.getFirst());
    assertEquals(4, snapshot.size());
    KvEvent.Stored second = (KvEvent.Stored) snapshot.get(2);
    assertEquals(OptionalLong.of(seq[0]), second.parentHash());
    assertEquals(pool.lastEventId(), second.eventId());
  }

  @Test
  void clearCacheForgetsUnreferencedPrefixes() {
    BlockPool pool = pool(2);
    long[] local = {1};
    long[] seq = BlockHasher.chainAll(local);
    int[] ids = allocate(pool, 1);
    pool.cache(ids, seq, local, 0, 1, BlockHasher.NO_SALT);
    pool.release(ids[0]);
    pool.clearCache();
    assertEquals(0, pool.cachedPrefixLength(seq));
    assertInstanceOf(KvEvent.Cleared.class, events.getLast());
  }
}
