package dev.tandem.bench;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import dev.tandem.router.KvSelector;
import dev.tandem.router.RoutingRequest;
import dev.tandem.router.WorkerLoad;
import dev.tandem.router.index.ApproximateIndex;
import dev.tandem.router.index.BlockHashIndex;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.SplittableRandom;

/**
 * The router's index at scale, on one core: many simulated workers, many cached prefix families.
 * Measures event ingest, index lookups and full routing decisions (cost over every worker) for
 * 4k-token prompts, and the heap each cached block costs.
 *
 * <p>Run: {@code java -Xmx8g -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
 * dev.tandem.bench.IndexScale [workers] [families] [blocks per family] [decisions]}
 */
public final class IndexScale {
  private IndexScale() {}

  public static void main(String[] args) {
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
      long[] seq = BlockHasher.chainAll(familyLocal[f]);
      List<KvEvent.StoredBlock> blocks = new ArrayList<>(familyBlocks);
      for (int b = 0; b < familyBlocks; b++) {
        blocks.add(new KvEvent.StoredBlock(seq[b], familyLocal[f][b]));
      }
      events.add(new KvEvent.Stored(f + 1, OptionalLong.empty(), blocks, StorageTier.DEVICE));
    }

    long heapBefore = usedHeap();
    BlockHashIndex index = new BlockHashIndex();
    long t0 = System.nanoTime();
    for (int f = 0; f < families; f++) {
      index.apply(ids[f % workers], events.get(f));
    }
    double ingestS = (System.nanoTime() - t0) / 1e9;
    events = null;
    long heapAfter = usedHeap();
    long cachedBlocks = (long) families * familyBlocks;
    System.out.printf(Locale.ROOT,
        "ingest: %d stored events (%d blocks) from %d workers in %.2f s: %.0f events/s, %.0f blocks/s%n",
        families, cachedBlocks, workers, ingestS, families / ingestS, cachedBlocks / ingestS);
    System.out.printf(Locale.ROOT, "memory: %.0f bytes per cached block (heap %d MB -> %d MB)%n",
        (double) (heapAfter - heapBefore) / cachedBlocks, heapBefore >> 20, heapAfter >> 20);

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
    List<WorkerLoad> loads = new ArrayList<>(workers);
    for (int i = 0; i < workers; i++) {
      var speed = new WorkerLoad.Speed(
          new dev.tandem.common.PrefillCost(50e-6 * (1 + random.nextDouble()), 1e-9), random.nextInt(4000), 256, 8192, 0.01);
      loads.add(new WorkerLoad(ids[i], random.nextInt(8), random.nextInt(64), random.nextInt(2000), 0, 0, random.nextInt(10_000), 16_384, speed));
    }
    KvSelector blocks = new KvSelector(index, ApproximateIndex.withDefaults(), w -> false, index::blockCount, KvSelector.Weights.defaults());
    KvSelector seconds = new KvSelector(index, ApproximateIndex.withDefaults(), w -> false, index::blockCount, index::blockCount,
        dev.tandem.router.PredictedTtftCost.defaults(), 0);

    long sink = 0;
    double[] lookupUs = new double[decisions];
    for (int pass = 0; pass < 2; pass++) { // the first pass warms the JIT up
      for (int i = 0; i < decisions; i++) {
        long s = System.nanoTime();
        sink += index.overlaps(requests[i % distinct]).size();
        lookupUs[i] = (System.nanoTime() - s) / 1e3;
      }
    }
    report("index lookup (overlap of a 4k-token prompt)", lookupUs);

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
    }
    if (sink == 42) {
      System.out.println();
    }
  }

  private static void report(String what, double[] us) {
    double total = Arrays.stream(us).sum();
    double[] sorted = us.clone();
    Arrays.sort(sorted);
    System.out.printf(Locale.ROOT, "%s: %.0f ops/s on one thread, p50 %.2f us, p99 %.2f us, max %.1f us%n",
        what, us.length / (total / 1e6), sorted[sorted.length / 2], sorted[(int) (sorted.length * 0.99)], sorted[sorted.length - 1]);
  }

  private static long usedHeap() {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return rt.totalMemory() - rt.freeMemory();
  }
}
