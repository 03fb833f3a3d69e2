package dev.tandem.router.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The index against a plain model of what each worker holds: random stores (whole prompts, runs
 * continuing a parent, single blocks out of order as a snapshot sends them), removals from the
 * tail and from the middle, tier changes, clears and departures, over prompts long enough that
 * lookups jump. Every lookup must equal the model's leading-block count per worker and tier.
 */
class BlockHashIndexModelTest {
  private static final StorageTier[] TIERS = StorageTier.values();

  /** Root-to-leaf prompts (sequence hashes) that share prefixes and branch. */
  private List<long[]> prompts(SplittableRandom random, int count) {
    List<long[]> localsOf = new ArrayList<>();
    List<long[]> out = new ArrayList<>();
    for (int p = 0; p < count; p++) {
      int length = 1 + random.nextInt(150);
      long[] locals = new long[length];
      int shared = 0;
      if (!localsOf.isEmpty() && random.nextInt(4) > 0) {
        long[] from = localsOf.get(random.nextInt(localsOf.size()));
        shared = Math.min(length, random.nextInt(from.length + 1));
        System.arraycopy(from, 0, locals, 0, shared);
      }
      for (int b = shared; b < length; b++) {
        locals[b] = random.nextLong();
      }
      localsOf.add(locals);
      out.add(BlockHasher.chainAll(locals));
    }
    // Local hashes travel with the sequence hashes (the index tells a prompt's first block by them).
    localOf.clear();
    for (int p = 0; p < count; p++) {
      long[] seq = out.get(p);
      long[] locals = localsOf.get(p);
      for (int b = 0; b < seq.length; b++) {
        localOf.put(seq[b], locals[b]);
      }
    }
    return out;
  }

  private final Map<Long, Long> localOf = new HashMap<>();

  private KvEvent.Stored stored(long id, long[] prompt, int from, int to, StorageTier tier) {
    List<KvEvent.StoredBlock> blocks = new ArrayList<>();
    for (int b = from; b < to; b++) {
      blocks.add(new KvEvent.StoredBlock(prompt[b], localOf.get(prompt[b])));
    }
    return new KvEvent.Stored(id, from == 0 ? OptionalLong.empty() : OptionalLong.of(prompt[from - 1]), blocks, tier);
  }

  /** What the index should answer: per worker, the leading blocks it holds, by tier. */
  private static Map<WorkerId, Overlap> expected(Map<WorkerId, Map<Long, StorageTier>> model, long[] query) {
    Map<WorkerId, Overlap> out = new HashMap<>();
    model.forEach((w, blocks) -> {
      int[] tiers = new int[3];
      int b = 0;
      while (b < query.length && blocks.containsKey(query[b])) {
        tiers[blocks.get(query[b]).ordinal()]++;
        b++;
      }
      if (b > 0) {
        out.put(w, new Overlap(tiers[0], tiers[1], tiers[2]));
      }
    });
    return out;
  }

  @Test
  void everyLookupEqualsTheModelThroughRandomEventStreams() {
    for (int seed = 0; seed < 40; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      List<long[]> prompts = prompts(random, 12);
      WorkerId[] workers = {new WorkerId("a"), new WorkerId("b"), new WorkerId("c"), new WorkerId("d")};
      Map<WorkerId, Map<Long, StorageTier>> model = new LinkedHashMap<>();
      for (WorkerId w : workers) {
        model.put(w, new HashMap<>());
      }
      BlockHashIndex index = new BlockHashIndex();
      long id = 0;
      boolean offDevice = seed % 4 == 3; // a quarter of the runs move blocks off device too
      for (int step = 0; step < 600; step++) {
        WorkerId w = workers[random.nextInt(workers.length)];
        Map<Long, StorageTier> mine = model.get(w);
        long[] prompt = prompts.get(random.nextInt(prompts.size()));
        int op = random.nextInt(100);
        StorageTier tier = offDevice && random.nextInt(5) == 0 ? TIERS[1 + random.nextInt(2)] : StorageTier.DEVICE;
        if (op < 35) { // a whole prompt, or the part after what it already holds
          int from = 0;
          while (from < prompt.length && mine.containsKey(prompt[from]) && random.nextInt(10) > 0) {
            from++;
          }
          if (from < prompt.length) {
            int to = from + 1 + random.nextInt(prompt.length - from);
            index.apply(w, stored(++id, prompt, from, to, tier));
            for (int b = from; b < to; b++) {
              mine.put(prompt[b], tier);
            }
          }
        } else if (op < 45) { // one block, its parent perhaps not held (a snapshot's order)
          int b = random.nextInt(prompt.length);
          index.apply(w, stored(++id, prompt, b, b + 1, tier));
          mine.put(prompt[b], tier);
        } else if (op < 70) { // evict from the tail, leaf first
          int held = 0;
          while (held < prompt.length && mine.containsKey(prompt[held])) {
            held++;
          }
          if (held > 0) {
            int n = 1 + random.nextInt(held);
            long[] removed = new long[n];
            for (int i = 0; i < n; i++) {
              removed[i] = prompt[held - 1 - i];
              mine.remove(removed[i]);
            }
            index.apply(w, new KvEvent.Removed(++id, removed, StorageTier.DEVICE));
          }
        } else if (op < 85) { // evict from the middle: a hole
          int b = random.nextInt(prompt.length);
          index.apply(w, new KvEvent.Removed(++id, new long[] {prompt[b]}, StorageTier.DEVICE));
          mine.remove(prompt[b]);
        } else if (op < 88) {
          index.apply(w, new KvEvent.Cleared(++id));
          mine.clear();
        } else if (op < 90) {
          index.removeWorker(w);
          mine.clear();
        } else {
          long[] query = prompts.get(random.nextInt(prompts.size()));
          assertEquals(expected(model, query), index.overlaps(query), "seed " + seed + " step " + step);
        }
        assertEquals(mine.size(), index.blockCount(w), "seed " + seed + " step " + step + " count of " + w);
      }
      for (long[] query : prompts) {
        assertEquals(expected(model, query), index.overlaps(query), "seed " + seed + " at the end");
      }
      long distinct = model.values().stream().flatMap(m -> m.keySet().stream()).distinct().count();
      assertEquals(distinct, index.blockCount(), "seed " + seed + " distinct blocks");
      for (WorkerId w : workers) {
        index.removeWorker(w);
      }
      assertEquals(0, index.entries(), "seed " + seed + ": entries left once every worker is gone");
    }
  }

  /** A prompt of {@code blocks} random blocks (sequence hashes; their local hashes remembered). */
  private long[] randomPrompt(long seed, int blocks) {
    SplittableRandom random = new SplittableRandom(seed);
    long[] locals = new long[blocks];
    for (int b = 0; b < blocks; b++) {
      locals[b] = random.nextLong();
    }
    long[] prompt = BlockHasher.chainAll(locals);
    localOf.clear();
    for (int b = 0; b < blocks; b++) {
      localOf.put(prompt[b], locals[b]);
    }
    return prompt;
  }

  /** Jumps skip blocks: a prefix-closed worker holding 4,000 blocks matches to the block where it stops. */
  @Test
  void aLongPrefixClosedMatchStopsExactlyWhereTheWorkerDoes() {
    long[] prompt = randomPrompt(7, 4000);
    WorkerId w = new WorkerId("w");
    for (int held : new int[] {1, 2, 31, 32, 33, 64, 65, 1000, 3999, 4000}) {
      BlockHashIndex index = new BlockHashIndex();
      index.apply(w, stored(1, prompt, 0, held, StorageTier.DEVICE));
      assertEquals(Map.of(w, new Overlap(held, 0, 0)), index.overlaps(prompt), held + " blocks held");
    }
  }

  /**
   * Lookups beside a writer see the index between two events, never inside one: a worker stores
   * and removes one 64-block prompt in single events, so every lookup sees all of it or none,
   * while another worker's 40 blocks of the same prompt always show as 40.
   */
  @Test
  void lookupsBesideAWriterSeeWholeEventsOnly() throws Exception {
    long[] prompt = randomPrompt(3, 64);
    WorkerId steady = new WorkerId("steady");
    WorkerId churn = new WorkerId("churn");
    BlockHashIndex index = new BlockHashIndex();
    index.apply(steady, stored(1, prompt, 0, 40, StorageTier.DEVICE));
    long[] reversed = new long[prompt.length];
    for (int b = 0; b < prompt.length; b++) {
      reversed[b] = prompt[prompt.length - 1 - b];
    }
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong full = new AtomicLong();
    AtomicLong none = new AtomicLong();
    ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    List<Thread> readers = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      Thread t = new Thread(() -> {
        while (!done.get()) {
          Map<WorkerId, Overlap> o = index.overlaps(prompt);
          Overlap c = o.get(churn);
          if (!new Overlap(40, 0, 0).equals(o.get(steady)) || (c != null && c.blocks() != 64)) {
            wrong.add(o.toString());
          } else if (c == null) {
            none.incrementAndGet();
          } else {
            full.incrementAndGet();
          }
        }
      });
      t.start();
      readers.add(t);
    }
    long id = 1;
    long until = System.nanoTime() + 1_000_000_000L;
    while (System.nanoTime() < until) {
      index.apply(churn, stored(++id, prompt, 0, 64, StorageTier.DEVICE));
      index.apply(churn, new KvEvent.Removed(++id, reversed, StorageTier.DEVICE));
    }
    done.set(true);
    for (Thread t : readers) {
      t.join();
    }
    assertTrue(wrong.isEmpty(), "lookups saw part of an event: " + wrong.stream().limit(3).toList());
    assertTrue(full.get() > 0 && none.get() > 0, "both states were seen: " + full + " full, " + none + " none");
  }
}
