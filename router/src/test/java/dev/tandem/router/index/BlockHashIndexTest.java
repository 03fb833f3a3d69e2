package dev.tandem.router.index;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The cases of issue 4: blocks named by their local hashes, chained into sequence hashes. */
class BlockHashIndexTest {
  private static final WorkerId W0 = new WorkerId("w0");
  private static final WorkerId W1 = new WorkerId("w1");
  private final BlockHashIndex index = new BlockHashIndex();
  private long nextId = 1;

  private static long[] seq(long... locals) {
    return BlockHasher.chainAll(locals);
  }

  private void store(WorkerId w, StorageTier tier, long... locals) {
    long[] s = seq(locals);
    List<KvEvent.StoredBlock> blocks = new ArrayList<>();
    for (int i = 0; i < s.length; i++) {
      blocks.add(new KvEvent.StoredBlock(s[i], locals[i]));
    }
    index.apply(w, new KvEvent.Stored(nextId++, OptionalLong.empty(), blocks, tier));
  }

  private void store(WorkerId w, long... locals) {
    store(w, StorageTier.DEVICE, locals);
  }

  private Map<WorkerId, Integer> match(long... locals) {
    Map<WorkerId, Integer> out = new java.util.HashMap<>();
    index.overlaps(seq(locals)).forEach((w, o) -> out.put(w, o.blocks()));
    return out;
  }

  @Test
  void matchesTheStoredPrefix() {
    store(W0, 1, 2, 3);
    assertEquals(Map.of(W0, 3), match(1, 2, 3));
    assertEquals(Map.of(W0, 2), match(1, 2, 9));
    assertEquals(Map.of(), match(9, 2, 3));
  }

  @Test
  void sharedFirstBlockMatchesBothWorkersToTheirDepth() {
    store(W0, 1, 2, 3);
    store(W1, 1, 4, 5);
    assertEquals(Map.of(W0, 3, W1, 1), match(1, 2, 3));
    assertEquals(Map.of(W0, 1, W1, 3), match(1, 4, 5));
  }

  /** A prefix forty workers hold to different depths (the position-table path) matches each to its own depth. */
  @Test
  void aPopularPrefixMatchesEveryHolderToItsDepth() {
    Map<WorkerId, Integer> expected = new java.util.HashMap<>();
    for (int i = 0; i < 40; i++) {
      WorkerId w = new WorkerId("p" + i);
      int depth = 1 + i % 6;
      long[] locals = new long[depth];
      for (int b = 0; b < depth; b++) {
        locals[b] = b + 1;
      }
      store(w, locals);
      expected.put(w, depth);
    }
    store(W0, 1, 2, 99); // diverges at the third block
    expected.put(W0, 2);
    assertEquals(expected, match(1, 2, 3, 4, 5, 6));
    assertEquals(expected, match(1, 2, 3, 4, 5, 6)); // again: the per-thread table is reset between calls
  }

  @Test
  void removalsShrinkTheMatch() {
    store(W0, 1, 2, 3);
    long[] s = seq(1, 2, 3);
    index.apply(W0, new KvEvent.Removed(nextId++, new long[] {s[2]}, StorageTier.DEVICE));
    assertEquals(Map.of(W0, 2), match(1, 2, 3));
    // A gap in the middle ends the match there even if later blocks are still held.
    store(W0, 1, 2, 3);
    index.apply(W0, new KvEvent.Removed(nextId++, new long[] {s[1]}, StorageTier.DEVICE));
    assertEquals(Map.of(W0, 1), match(1, 2, 3));
  }

  @Test
  void removedWorkerNoLongerMatches() {
    store(W0, 1, 2, 3);
    store(W1, 1, 2);
    index.removeWorker(W0);
    assertEquals(Map.of(W1, 2), match(1, 2, 3));
    assertEquals(0, index.blockCount(W0));
    assertEquals(2, index.blockCount());
  }

  @Test
  void clearedEventForgetsOnlyThatWorker() {
    store(W0, 1, 2);
    store(W1, 1, 2);
    index.apply(W0, new KvEvent.Cleared(nextId++));
    assertEquals(Map.of(W1, 2), match(1, 2));
  }

  @Test
  void tiesReportEqualOverlapAndTiersAreCounted() {
    store(W0, StorageTier.DEVICE, 1, 2);
    store(W1, StorageTier.HOST, 1, 2);
    Map<WorkerId, Overlap> o = index.overlaps(seq(1, 2));
    assertEquals(new Overlap(2, 0, 0), o.get(W0));
    assertEquals(new Overlap(0, 2, 0), o.get(W1));
    assertEquals(2.0, o.get(W0).credit());
    assertEquals(1.5, o.get(W1).credit());
  }

  @Test
  void unknownParentsAndRemovalsAreCounted() {
    long[] s = seq(1, 2);
    index.apply(W0, new KvEvent.Stored(nextId++, OptionalLong.of(s[0]),
        List.of(new KvEvent.StoredBlock(s[1], 2)), StorageTier.DEVICE));
    assertEquals(1, index.unknownParents());
    index.apply(W0, new KvEvent.Removed(nextId++, new long[] {12345L}, StorageTier.DEVICE));
    assertEquals(1, index.unknownRemovals());
    // Without its parent the orphan block matches nothing from the root.
    assertEquals(Map.of(), match(1, 2));
  }
}
