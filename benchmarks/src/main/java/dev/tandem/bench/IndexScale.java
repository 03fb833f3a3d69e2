package dev.tandem.bench;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import dev.tandem.planner.sim.SyntheticTraces;
import dev.tandem.planner.sim.Trace;
import dev.tandem.planner.sim.TraceRequest;
import dev.tandem.router.KvSelector;
import dev.tandem.router.LoadOrder;
import dev.tandem.router.RoutingRequest;
import dev.tandem.router.WorkerLoad;
import dev.tandem.router.index.ApproximateIndex;
import dev.tandem.router.index.BlockHashIndex;
import dev.tandem.router.index.Overlap;
import it.unimi.dsi.fastutil.longs.LongLinkedOpenHashSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The router's index at scale: many simulated workers, many cached prefix families. Measures event
 * ingest, the heap each cached block costs, index lookups for 4k-token prompts (a family's
 * 32-block prefix then new blocks, and a prompt one worker holds whole), full routing decisions
 * over every worker, and a replay of a Mooncake-format trace (lookups, stored and removed events
 * mixed, as a router sees them) on one thread and on two.
 *
 * <p>Run: {@code java -Xmx12g -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
 * dev.tandem.bench.IndexScale [workers] [families] [blocks per family] [decisions]}
 */
public final class IndexScale {
  private IndexScale() {}

  public static void main(String[] args) throws InterruptedException {
    int workers = args.length > 0 ? Integer.parseInt(args[0]) : 1_000;
    int families = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
    int familyBlocks = args.length > 2 ? Integer.parseInt(args[2]) : 32;
    int decisions = args.length > 3 ? Integer.parseInt(args[3]) : 200_000;
    int promptBlocks = 256; // 4,096 tokens at block size 16
    SplittableRandom random = new SplittableRandom(42);

    WorkerId[] ids = new WorkerId[workers];
    for (int i = 0; i < workers; i++) {
      ids[i] = new WorkerId("worker-" + i);
    }
    long[][] familyLocal = new long[families][familyBlocks];
    List<KvEvent> events = new ArrayList<>(families);
    for (int f = 0; f < families; f++) {
      for (int b = 0; b < familyBlocks; b++) {
        familyLocal[f][b] = random.nextLong();
      }
      events.add(stored(f + 1, familyLocal[f], 0, familyBlocks, OptionalLong.empty()));
    }

    // Ingest: into a fresh index (its table grows from empty), then twice more into the same index
    // emptied by its workers leaving (its table already sized: a running router's steady state).
    long base = usedHeap();
    BlockHashIndex index = new BlockHashIndex();
    long cachedBlocks = (long) families * familyBlocks;
    for (int round = 1; round <= 4; round++) {
      if (round == 3) {
        index = null;
        base = usedHeap(); // rounds 3 and 4: a fresh index again, after round 2 warmed the JIT up
        index = new BlockHashIndex();
      }
      long t0 = System.nanoTime();
      for (int f = 0; f < families; f++) {
        index.apply(ids[f % workers], events.get(f));
      }
      double s = (System.nanoTime() - t0) / 1e9;
      System.out.printf(Locale.ROOT,
          "ingest, %s: %d stored events (%d blocks) from %d workers in %.3f s: %.0f events/s, %.2f M blocks/s%n",
          round % 2 == 1 ? "table growing from empty" : "table already sized", families, cachedBlocks, workers, s,
          families / s, cachedBlocks / s / 1e6);
      if (round % 2 == 1) {
        for (WorkerId w : ids) {
          index.removeWorker(w);
        }
      }
    }
    long withIndex = usedHeap();
    System.out.printf(Locale.ROOT, "memory: %.1f bytes per cached block (the index's heap: %d MB)%n",
        (double) (withIndex - base) / cachedBlocks, (withIndex - base) >> 20);

    // The same refill with each event built just before it is applied, as a router decodes events
    // off the wire: the event is in cache, so what is timed is the index (the rounds above also
    // read 100,000 pre-built events, 77 MB, from memory). Only apply is timed.
    for (WorkerId w : ids) {
      index.removeWorker(w);
    }
    long[][] familySeq = new long[families][];
    for (int f = 0; f < families; f++) {
      familySeq[f] = BlockHasher.chainAll(familyLocal[f]);
    }
    long applyNanos = 0;
    for (int f = 0; f < families; f++) {
      List<KvEvent.StoredBlock> blocks = new ArrayList<>(familyBlocks);
      for (int b = 0; b < familyBlocks; b++) {
        blocks.add(new KvEvent.StoredBlock(familySeq[f][b], familyLocal[f][b]));
      }
      KvEvent.Stored event = new KvEvent.Stored(f + 1, OptionalLong.empty(), blocks, StorageTier.DEVICE);
      long t0 = System.nanoTime();
      index.apply(ids[f % workers], event);
      applyNanos += System.nanoTime() - t0;
    }
    System.out.printf(Locale.ROOT, "ingest, table already sized, each event built just before it is applied: %.2f M blocks/s%n",
        cachedBlocks / (applyNanos / 1e9) / 1e6);

    // Requests: a family's prefix, then new blocks up to 4k tokens.
    int distinct = 4096;
    long[][] requests = new long[distinct][];
    int[][] tokens = new int[distinct][];
    for (int r = 0; r < distinct; r++) {
      long[] local = new long[promptBlocks];
      long[] prefix = familyLocal[random.nextInt(families)];
      for (int b = 0; b < promptBlocks; b++) {
        local[b] = b < familyBlocks ? prefix[b] : random.nextLong();
      }
      requests[r] = BlockHasher.chainAll(local);
      tokens[r] = new int[promptBlocks * 16];
    }
    // Whole 4k-token prompts, each held entire by one worker.
    int whole = 1024;
    long[][] wholePrompts = new long[whole][];
    for (int r = 0; r < whole; r++) {
      long[] local = new long[promptBlocks];
      for (int b = 0; b < promptBlocks; b++) {
        local[b] = random.nextLong();
      }
      wholePrompts[r] = BlockHasher.chainAll(local);
      index.apply(ids[r % workers], stored(families + r + 1, local, 0, promptBlocks, OptionalLong.empty()));
    }
    long sink = 0;
    double[] lookupUs = new double[decisions];
    for (long[][] set : List.of(requests, wholePrompts)) {
      for (int pass = 0; pass < 2; pass++) { // the first pass warms the JIT up
        for (int i = 0; i < decisions; i++) {
          long s = System.nanoTime();
          sink += index.overlaps(set[i % set.length]).size();
          lookupUs[i] = (System.nanoTime() - s) / 1e3;
        }
      }
      report(set == requests
          ? "index lookup, 4k-token prompt sharing a 32-block prefix"
          : "index lookup, 4k-token prompt one worker holds whole (256 blocks)", lookupUs);
    }

    List<WorkerLoad> loads = new ArrayList<>(workers);
    for (int i = 0; i < workers; i++) {
      var speed = new WorkerLoad.Speed(
          new dev.tandem.common.PrefillCost(50e-6 * (1 + random.nextDouble()), 1e-9), random.nextInt(4000), 256, 8192, 0.01);
      loads.add(new WorkerLoad(ids[i], random.nextInt(8), random.nextInt(64), random.nextInt(2000), 0, 0, random.nextInt(10_000), 16_384, speed));
    }
    KvSelector blocks = new KvSelector(index, ApproximateIndex.withDefaults(), w -> false, index::blockCount, KvSelector.Weights.defaults());
    KvSelector seconds = new KvSelector(index, ApproximateIndex.withDefaults(), w -> false, index::blockCount, index::blockCount,
        dev.tandem.router.PredictedTtftCost.defaults(), 0);
    for (KvSelector selector : List.of(blocks, seconds)) {
      double[] decideUs = new double[decisions / 10];
      for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < decideUs.length; i++) {
          RoutingRequest req = new RoutingRequest("r", tokens[i % distinct].length, requests[i % distinct], 16);
          long s = System.nanoTime();
          sink += selector.select(req, loads).predictedOverlap().blocks();
          decideUs[i] = (System.nanoTime() - s) / 1e3;
        }
      }
      report("routing decision, " + selector.kvCost().name() + " cost (lookup + cost over " + workers + " workers)", decideUs);
      // The same decisions over the pool kept in load order: only those that can win are priced.
      LoadOrder order = new LoadOrder(selector.kvCost(), 16);
      loads.forEach(order::put);
      for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < decideUs.length; i++) {
          RoutingRequest req = new RoutingRequest("r", tokens[i % distinct].length, requests[i % distinct], 16);
          long s = System.nanoTime();
          sink += selector.select(req, order, w -> true).predictedOverlap().blocks();
          decideUs[i] = (System.nanoTime() - s) / 1e3;
        }
      }
      report("routing decision, " + selector.kvCost().name() + " cost over the pool in load order (" + workers + " workers)", decideUs);
    }
    index = null;
    events = null;
    usedHeap();

    replay(workers, false);
    replay(workers, true);
    if (sink == 42) {
      System.out.println();
    }
  }

  /**
   * A Mooncake-format trace (its published statistics: SyntheticTraces "mooncake", an hour at
   * 6.56 requests/s, mean prompt 7,590 tokens) as a router's index sees it: each request a lookup,
   * then a stored event for each run of blocks its worker lacked and a removed event for those its
   * LRU cache pushed out. Each 512-token hash id is 32 blocks of 16 tokens, as an engine hashes
   * them. A first pass routes every request (to the worker holding most of it, else by its first
   * block) and records the operations; the timed passes replay them into a fresh index, on one
   * thread in trace order, or on two, each with the operations of half the workers (every worker's
   * events stay in order on one thread), against the one shared index.
   *
   * <p>{@code disaggregated}: half the workers prefill and half decode; each request is routed to
   * the prefill worker holding most of it and to a decode worker drawn at random (as load would
   * spread them), and both cache the prompt — so most blocks have two holders, as in a
   * disaggregated deployment's index.
   */
  private static void replay(int workers, boolean disaggregated) throws InterruptedException {
    Trace trace = SyntheticTraces.generate(SyntheticTraces.Spec.of("mooncake", 0));
    int perId = trace.blockTokens() / 16;
    int cacheBlocks = 2_048; // 32,768 tokens a worker: caches fill and evict
    WorkerId[] ids = new WorkerId[workers];
    for (int i = 0; i < workers; i++) {
      ids[i] = new WorkerId("worker-" + i);
    }
    List<Op> ops = new ArrayList<>();
    BlockHashIndex routing = new BlockHashIndex();
    LongLinkedOpenHashSet[] caches = new LongLinkedOpenHashSet[workers];
    long[] eventIds = new long[workers];
    long lookups = 0;
    long[] counted = new long[2]; // blocks stored, removed
    int prefillWorkers = disaggregated ? workers / 2 : workers;
    SplittableRandom draw = new SplittableRandom(7);
    for (TraceRequest r : trace.requests()) {
      int n = Math.max(1, r.inputTokens() / 16);
      long[] local = new long[n];
      for (int b = 0; b < n; b++) {
        local[b] = BlockHasher.chain(r.blockIds()[Math.min(b / perId, r.blockIds().length - 1)], b % perId);
      }
      long[] prompt = BlockHasher.chainAll(local);
      int chosen = (int) Math.floorMod(prompt[0], (long) prefillWorkers);
      int best = 0;
      for (var e : routing.overlaps(prompt).entrySet()) {
        int w = Integer.parseInt(e.getKey().value().substring(7));
        if (e.getValue().blocks() > best && w < prefillWorkers) {
          best = e.getValue().blocks();
          chosen = w;
        }
      }
      List<Op> mine = new ArrayList<>();
      mine.add(new Op(chosen, prompt, null, 0));
      lookups++;
      cacheOps(chosen, prompt, local, caches, eventIds, cacheBlocks, counted, mine);
      if (disaggregated) {
        cacheOps(prefillWorkers + draw.nextInt(workers - prefillWorkers), prompt, local, caches, eventIds, cacheBlocks, counted, mine);
      }
      for (Op op : mine) {
        if (op.event() != null) {
          routing.apply(ids[op.worker()], op.event());
        }
      }
      ops.addAll(mine);
    }
    routing = null;
    caches = null;
    long storedBlocks = counted[0];
    long removedBlocks = counted[1];
    long total = lookups + storedBlocks + removedBlocks;
    System.out.printf(Locale.ROOT,
        "replay%s: Mooncake-format trace, %d requests: %d lookups, %.2f M blocks stored, %.2f M removed (%.2f M ops; "
            + "a lookup, or a block stored or removed, is one op), %d workers caching %d blocks of 16 tokens each%n",
        disaggregated ? " (disaggregated: each prompt cached by a prefill and a decode worker)" : "",
        trace.requests().size(), lookups, storedBlocks / 1e6, removedBlocks / 1e6, total / 1e6, workers, cacheBlocks);
    for (int threads : new int[] {1, 2, 1, 2}) { // each twice: the first of each warms up
      BlockHashIndex index = new BlockHashIndex();
      List<Thread> running = new ArrayList<>();
      long t0 = System.nanoTime();
      for (int part = 0; part < threads; part++) {
        int mine = part;
        int parts = threads;
        Thread t = new Thread(() -> {
          long sink = 0;
          for (Op op : ops) {
            if (op.worker() % parts != mine) {
              continue;
            }
            if (op.lookup() != null) {
              sink += index.overlaps(op.lookup()).size();
            } else {
              index.apply(ids[op.worker()], op.event());
            }
          }
          if (sink == 42) {
            System.out.println();
          }
        });
        t.start();
        running.add(t);
      }
      for (Thread t : running) {
        t.join();
      }
      double s = (System.nanoTime() - t0) / 1e9;
      System.out.printf(Locale.ROOT, "replay%s, %d thread%s: %.3f s, %.2f M ops/s combined, %.0f lookups/s%n",
          disaggregated ? " (disaggregated)" : "", threads, threads == 1 ? "" : "s", s, total / s / 1e6, lookups / s);
    }
  }

  /** One operation of a replay: a lookup, or an event of {@code worker}'s stream ({@code blocks} in it). */
  private record Op(int worker, long[] lookup, KvEvent event, int blocks) {}

  /**
   * {@code worker} caches {@code prompt}: a stored event for each run of blocks its cache lacked, a
   * removed event for what its LRU pushed out; appended to {@code out}, counted in {@code counted}.
   */
  private static void cacheOps(int worker, long[] prompt, long[] local, LongLinkedOpenHashSet[] caches, long[] eventIds,
      int cacheBlocks, long[] counted, List<Op> out) {
    LongLinkedOpenHashSet cache = caches[worker] == null ? (caches[worker] = new LongLinkedOpenHashSet()) : caches[worker];
    // Each run of blocks the cache lacks is one stored event; then the prompt is touched last
    // block first, so that its parents are the more recently used (leaves are evicted first).
    List<KvEvent.StoredBlock> run = new ArrayList<>();
    for (int b = 0; b <= prompt.length; b++) {
      if (b < prompt.length && !cache.contains(prompt[b])) {
        run.add(new KvEvent.StoredBlock(prompt[b], local[b]));
      } else if (!run.isEmpty()) {
        int from = b - run.size();
        out.add(new Op(worker, null, new KvEvent.Stored(++eventIds[worker],
            from == 0 ? OptionalLong.empty() : OptionalLong.of(prompt[from - 1]), run, StorageTier.DEVICE), run.size()));
        counted[0] += run.size();
        run = new ArrayList<>();
      }
    }
    for (int b = prompt.length - 1; b >= 0; b--) {
      cache.addAndMoveToLast(prompt[b]);
    }
    int over = cache.size() - cacheBlocks;
    if (over > 0) {
      long[] removed = new long[over];
      for (int i = 0; i < over; i++) {
        removed[i] = cache.removeFirstLong();
      }
      out.add(new Op(worker, null, new KvEvent.Removed(++eventIds[worker], removed, StorageTier.DEVICE), over));
      counted[1] += over;
    }
  }

  private static KvEvent.Stored stored(long id, long[] local, int from, int to, OptionalLong parent) {
    long[] seq = BlockHasher.chainAll(local);
    List<KvEvent.StoredBlock> blocks = new ArrayList<>(to - from);
    for (int b = from; b < to; b++) {
      blocks.add(new KvEvent.StoredBlock(seq[b], local[b]));
    }
    return new KvEvent.Stored(id, parent, blocks, StorageTier.DEVICE);
  }

  private static void report(String what, double[] us) {
    double total = Arrays.stream(us).sum();
    double[] sorted = us.clone();
    Arrays.sort(sorted);
    System.out.printf(Locale.ROOT, "%s: %.0f ops/s on one thread, p50 %.2f us, p90 %.2f us, p99 %.2f us, max %.1f us%n",
        what, us.length / (total / 1e6), sorted[sorted.length / 2], sorted[(int) (sorted.length * 0.9)],
        sorted[(int) (sorted.length * 0.99)], sorted[sorted.length - 1]);
  }

  private static long usedHeap() {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return rt.totalMemory() - rt.freeMemory();
  }
}
