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

  private void apply(WorkerId w, OptionalLong parent, long hash) {
    index.apply(w, new KvEvent.Stored(nextId++, parent, List.of(new KvEvent.StoredBlock(hash, hash)), StorageTier.DEVICE));
  }

  private void remove(WorkerId w, long... hashes) {
    index.apply(w, new KvEvent.Removed(nextId++, hashes, StorageTier.DEVICE));
  }

  /**
   * A block two workers hold shares its slot's parent hash between them; two workers that name
   * different parents for it (a malformed stream, or a hash collision) must each keep their own,
   * or removing one releases the wrong parent and leaves a ghost behind. W1 first holds x as a
   * ghost (a child named it), then stores it under another parent than W0's.
   */
  @Test
  void twoHoldersThatNameDifferentParentsKeepTheirOwn() {
    long p0 = 101, p1 = 202, x = 303, y = 404;
    apply(W0, OptionalLong.empty(), p0);
    apply(W0, OptionalLong.of(p0), x);
    apply(W1, OptionalLong.empty(), p1);
    apply(W1, OptionalLong.of(x), y);
    apply(W1, OptionalLong.of(p1), x);
    assertEquals(Map.of(W0, new Overlap(2, 0, 0)), index.overlaps(new long[] {p0, x}));
    assertEquals(Map.of(W1, new Overlap(3, 0, 0)), index.overlaps(new long[] {p1, x, y}));
    remove(W0, x, p0);
    remove(W1, y, x, p1);
    assertEquals(0, index.entries(), "a ghost or an entry was left behind");
    assertEquals(0, index.blockCount(W0) + index.blockCount(W1));
  }

  /** The same two workers with the same parent, removed in either order, leave nothing. */
  @Test
  void aBlockTwoWorkersHoldGoesWithTheLastOfThem() {
    long p = 11, x = 22;
    for (boolean firstGoesFirst : new boolean[] {true, false}) {
      apply(W0, OptionalLong.empty(), p);
      apply(W0, OptionalLong.of(p), x);
      apply(W1, OptionalLong.empty(), p);
      apply(W1, OptionalLong.of(p), x);
      assertEquals(Map.of(W0, new Overlap(2, 0, 0), W1, new Overlap(2, 0, 0)), index.overlaps(new long[] {p, x}));
      WorkerId first = firstGoesFirst ? W0 : W1;
      WorkerId second = firstGoesFirst ? W1 : W0;
      remove(first, x, p);
      assertEquals(Map.of(second, new Overlap(2, 0, 0)), index.overlaps(new long[] {p, x}));
      remove(second, x, p);
      assertEquals(0, index.entries());
    }
  }

  /**
   * Two holders share a slot's entry while each one's fields fit in half of it; a block with more
   * children under one worker than half holds (4,095) moves to a record and keeps every count.
   */
  @Test
  void aSharedBlockWithThousandsOfChildrenKeepsEveryCount() {
    long root = 7;
    apply(W0, OptionalLong.empty(), root);
    apply(W1, OptionalLong.empty(), root);
    int children = 5000;
    for (int c = 1; c <= children; c++) {
      apply(W0, OptionalLong.of(root), 1000 + c);
    }
    assertEquals(Map.of(W0, new Overlap(2, 0, 0), W1, new Overlap(1, 0, 0)), index.overlaps(new long[] {root, 1000 + children}));
    remove(W0, root); // a hole: its children still name it
    assertEquals(Map.of(W1, new Overlap(1, 0, 0)), index.overlaps(new long[] {root, 1001}));
    for (int c = 1; c <= children; c++) {
      remove(W0, 1000 + c);
    }
    remove(W1, root);
    assertEquals(0, index.entries(), "the ghost goes with its last child");
  }

  /** Past 65,535 workers an index no longer fits half a slot's entry: such a holder goes to a record. */
  @Test
  void workersPastWhatHalfAnEntryNamesStillShareBlocks() {
    long[] prompt = seq(1, 2, 3);
    List<WorkerId> many = new ArrayList<>();
    for (int i = 0; i < 65_540; i++) {
      many.add(new WorkerId("w" + i));
      index.apply(many.get(i), new KvEvent.Cleared(nextId++)); // registers the worker: indexes from 1 in order
    }
    WorkerId early = many.get(5);
    WorkerId late = many.get(65_539);
    List<KvEvent.StoredBlock> blocks = new ArrayList<>();
    for (int i = 0; i < prompt.length; i++) {
      blocks.add(new KvEvent.StoredBlock(prompt[i], i + 1));
    }
    index.apply(early, new KvEvent.Stored(nextId++, OptionalLong.empty(), blocks, StorageTier.DEVICE));
    index.apply(late, new KvEvent.Stored(nextId++, OptionalLong.empty(), blocks.subList(0, 2), StorageTier.DEVICE));
    assertEquals(Map.of(early, new Overlap(3, 0, 0), late, new Overlap(2, 0, 0)), index.overlaps(prompt));
    index.apply(early, new KvEvent.Removed(nextId++, new long[] {prompt[2], prompt[1], prompt[0]}, StorageTier.DEVICE));
    assertEquals(Map.of(late, new Overlap(2, 0, 0)), index.overlaps(prompt));
    index.removeWorker(late);
    assertEquals(0, index.entries());
  }
}
