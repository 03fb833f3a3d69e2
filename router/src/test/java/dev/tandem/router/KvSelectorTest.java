package dev.tandem.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import dev.tandem.router.index.ApproximateIndex;
import dev.tandem.router.index.Overlap;
import dev.tandem.router.index.BlockHashIndex;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class KvSelectorTest {
  private static final WorkerId A = new WorkerId("a");
  private static final WorkerId B = new WorkerId("b");
  private final BlockHashIndex index = new BlockHashIndex();
  private final ApproximateIndex approximate = ApproximateIndex.withDefaults();

  private static int[] tokens(int n, int salt) {
    return IntStream.range(0, n).map(i -> salt * 100_000 + i).toArray();
  }

  private static RoutingRequest request(int[] tokens) {
    return new RoutingRequest("r", tokens.length, BlockHasher.sequenceHashes(tokens, 16), 16);
  }

  private void cache(WorkerId w, int[] tokens) {
    long[] local = BlockHasher.localHashes(tokens, 16);
    long[] seq = BlockHasher.chainAll(local);
    List<KvEvent.StoredBlock> blocks = new ArrayList<>();
    for (int i = 0; i < seq.length; i++) {
      blocks.add(new KvEvent.StoredBlock(seq[i], local[i]));
    }
    index.apply(w, new KvEvent.Stored(1, OptionalLong.empty(), blocks, StorageTier.DEVICE));
  }

  private static WorkerLoad idle(WorkerId w) {
    return new WorkerLoad(w, 0, 0, 0, 0, 0, 0, 1000);
  }

  private KvSelector selector(double temperature, Set<WorkerId> approx) {
    // Ties are broken by the approximate index's count, as KvRouting wires it in production.
    return new KvSelector(index, approximate, approx::contains, approximate::blockCount, new KvSelector.Weights(1.0, 1.0, temperature));
  }

  @Test
  void prefersTheWorkerHoldingThePrefix() {
    int[] prompt = tokens(160, 1);
    cache(B, prompt);
    Selection s = selector(0, Set.of()).select(request(prompt), List.of(idle(A), idle(B)));
    assertEquals(B, s.worker());
    assertEquals(new Overlap(10, 0, 0), s.predictedOverlap());
  }

  @Test
  void costMatchesTheFormula() {
    int[] prompt = tokens(100, 2); // 7 blocks (6 full + 1 partial)
    KvSelector s = selector(0, Set.of());
    WorkerLoad busy = new WorkerLoad(A, 3, 4, 20, 0, 0, 0, 1000);
    // 1.0 × max(7 + 4 − 2.75, 0) + (20 + 7) + 1.0 × 3
    assertEquals(8.25 + 27 + 3, s.cost(request(prompt), busy, new Overlap(2, 1, 0)), 1e-9);
    assertEquals(0 + 7 + 0, s.cost(request(prompt), idle(A), new Overlap(7, 0, 0)) - 0, 1e-9);
  }

  @Test
  void requestsWaitingInTheWorkersQueueCountAsActive() {
    int[] prompt = tokens(100, 2); // 7 blocks
    KvSelector s = selector(0, Set.of());
    // The worker reports 2 running and 3 waiting (other replicas' work); blocks in use are not used.
    WorkerLoad reported = new WorkerLoad(A, 1, 0, 10, 2, 3, 50, 1000);
    assertEquals(7 + (10 + 7) + (1 + 3), s.cost(request(prompt), reported, Overlap.NONE), 1e-9);
  }

  @Test
  void loadOutweighsASmallOverlap() {
    int[] prompt = tokens(64, 3); // 4 blocks
    cache(B, prompt);
    WorkerLoad loadedB = new WorkerLoad(B, 10, 0, 200, 0, 0, 0, 1000);
    assertEquals(A, selector(0, Set.of()).select(request(prompt), List.of(idle(A), loadedB)).worker());
  }

  @Test
  void tiesGoToTheWorkerWithFewerCachedBlocks() {
    approximate.record(A, request(tokens(320, 9)).blockHashes()); // 20 blocks of an unrelated prefix were sent to A
    int[] prompt = tokens(32, 4);
    for (int i = 0; i < 20; i++) {
      assertEquals(B, selector(0, Set.of()).select(request(prompt), List.of(idle(A), idle(B))).worker());
    }
  }

  @Test
  void temperatureSpreadsChoicesTowardsCheaperWorkers() {
    int[] prompt = tokens(320, 5);
    cache(B, prompt);
    Map<WorkerId, Integer> counts = new HashMap<>();
    KvSelector hot = selector(1.0, Set.of());
    for (int i = 0; i < 2000; i++) {
      counts.merge(hot.select(request(prompt), List.of(idle(A), idle(B))).worker(), 1, Integer::sum);
    }
    // p(A) = e^-1 / (1 + e^-1) ≈ 0.27
    assertTrue(counts.get(A) > 400 && counts.get(A) < 700, counts.toString());
    assertTrue(counts.get(B) > counts.get(A));
  }

  @Test
  void workersWithoutEventsAreScoredFromWhatTheRouterSentThem() {
    int[] prompt = tokens(96, 6);
    approximate.record(A, request(prompt).blockHashes());
    Selection s = selector(0, Set.of(A)).select(request(prompt), List.of(idle(A), idle(B)));
    assertEquals(A, s.worker());
    assertEquals(6, s.predictedOverlap().blocks());
    // Without the approximate flag the (empty) event index decides: a tie at no overlap, broken
    // towards the worker that was sent fewer blocks.
    Selection byEvents = selector(0, Set.of()).select(request(prompt), List.of(idle(A), idle(B)));
    assertEquals(B, byEvents.worker());
    assertEquals(0, byEvents.predictedOverlap().blocks());
  }

  @Test
  void predictedSecondsWithinTheToleranceAreATieBrokenByBlocksSent() {
    int[] prompt = tokens(320, 7);
    approximate.record(A, request(tokens(320, 8)).blockHashes()); // A was sent 20 blocks already
    KvSelector seconds = new KvSelector(index, approximate, w -> false, approximate::blockCount, index::blockCount,
        PredictedTtftCost.defaults(), 0);
    // Two idle workers whose prefill fits differ by 2%: the same speed, as far as a fit can tell.
    WorkerLoad a = new WorkerLoad(A, 0, 0, 0, 0, 0, 0, 1000,
        new WorkerLoad.Speed(new dev.tandem.common.PrefillCost(98e-6, 0), 0, 64, 2048, 0));
    WorkerLoad b = new WorkerLoad(B, 0, 0, 0, 0, 0, 0, 1000,
        new WorkerLoad.Speed(new dev.tandem.common.PrefillCost(100e-6, 0), 0, 64, 2048, 0));
    for (int i = 0; i < 10; i++) {
      assertEquals(B, seconds.select(request(prompt), List.of(a, b)).worker(), "the tie goes to the worker sent fewer blocks");
    }
    // 20% apart is no tie: the faster worker wins.
    WorkerLoad fastA = new WorkerLoad(A, 0, 0, 0, 0, 0, 0, 1000,
        new WorkerLoad.Speed(new dev.tandem.common.PrefillCost(80e-6, 0), 0, 64, 2048, 0));
    assertEquals(A, seconds.select(request(prompt), List.of(fastA, b)).worker());
  }

  /**
   * Evicting blocks costs their recompute only if someone asks for them again: after prompts that
   * never find anything cached, a full worker with the shorter queue wins; while prompts keep
   * finding their prefixes, the empty worker with the longer queue does (its queue, 10 ms, is
   * less than the full one's eviction, 20 blocks × 16 tokens × 100 µs × 0.5 = 16 ms).
   */
  @Test
  void evictionCountsOnlyAsMuchAsRecentPromptsFoundTheirBlocksCached() {
    var speed = new dev.tandem.common.PrefillCost(100e-6, 0);
    WorkerLoad full = new WorkerLoad(A, 0, 0, 0, 0, 0, 100, 100, new WorkerLoad.Speed(speed, 0, 64, 2048, 0));
    WorkerLoad queued = new WorkerLoad(B, 0, 0, 0, 0, 0, 0, 100, new WorkerLoad.Speed(speed, 100, 64, 2048, 0));
    Map<WorkerId, Integer> workingSet = Map.of(A, 100, B, 0);
    int[] prompt = tokens(320, 40);

    KvSelector fresh = new KvSelector(index, approximate, w -> false, w -> 0, workingSet::get, PredictedTtftCost.defaults(), 0);
    assertEquals(1.0, fresh.reuse());
    assertEquals(B, fresh.select(request(prompt), List.of(full, queued)).worker(), "until shown otherwise, evicted blocks count");

    KvSelector noReuse = new KvSelector(index, approximate, w -> false, w -> 0, workingSet::get, PredictedTtftCost.defaults(), 0);
    for (int i = 0; i < 200; i++) {
      noReuse.select(request(tokens(320, 1_000 + i)), List.of(full, queued)); // never cached anywhere
    }
    assertTrue(noReuse.reuse() < 0.01, "reuse " + noReuse.reuse());
    assertEquals(A, noReuse.select(request(prompt), List.of(full, queued)).worker(), "nothing repeats: load alone decides");

    int[] family = tokens(320, 50);
    cache(new WorkerId("c"), family); // a third worker holds it: prompts find their blocks cached
    KvSelector reused = new KvSelector(index, approximate, w -> false, w -> 0, workingSet::get, PredictedTtftCost.defaults(), 0);
    for (int i = 0; i < 200; i++) {
      reused.select(request(family), List.of(full, queued));
    }
    assertEquals(1.0, reused.reuse(), 1e-9);
    assertEquals(B, reused.select(request(prompt), List.of(full, queued)).worker(), "prefixes repeat: evicting them costs");
  }

  /**
   * At temperature 0 the selector prices only candidates that can win (those holding part of the
   * prompt, and those whose lower bound comes within the tie tolerance): its choice must be one
   * pricing every candidate would make. Random fleets of 1–400 workers, random speeds (some
   * unmeasured), queues, running streams, full caches and overlaps, both costs.
   */
  @Test
  void pricingOnlyPossibleWinnersChoosesAsPricingEveryCandidate() {
    pricingOnlyPossibleWinners(false);
  }

  /**
   * The same over a {@link LoadOrder} with some workers not eligible (tried, draining): the choice
   * is among the eligible ones as pricing every one of them would make it, and a 400-worker
   * decision prices a few.
   */
  @Test
  void aLoadOrderedDecisionChoosesAsPricingEveryEligibleCandidate() {
    pricingOnlyPossibleWinners(true);
  }

  private void pricingOnlyPossibleWinners(boolean ordered) {
    java.util.SplittableRandom random = new java.util.SplittableRandom(7);
    Map<WorkerId, Integer> sent = new HashMap<>();
    Map<WorkerId, Integer> workingSet = new HashMap<>();
    List<KvCost> costs = List.of(PredictedTtftCost.defaults(), new PredictedTtftCost(0.05, 1.0), new BlockCost(4, 1));
    int priced = 0;
    for (int trial = 0; trial < 300; trial++) {
      KvCost cost = costs.get(trial % costs.size());
      int n = 1 + random.nextInt(400);
      int[] prompt = tokens(16 * (1 + random.nextInt(64)), 100 + trial);
      RoutingRequest request = request(prompt);
      BlockHashIndex events = new BlockHashIndex();
      List<WorkerLoad> fleet = new ArrayList<>();
      sent.clear();
      workingSet.clear();
      for (int i = 0; i < n; i++) {
        WorkerId w = new WorkerId("w" + i);
        if (random.nextInt(20) == 0) { // a few hold a leading part of the prompt
          int blocks = 1 + random.nextInt(request.promptBlocks());
          long[] seq = java.util.Arrays.copyOf(request.blockHashes(), blocks);
          List<KvEvent.StoredBlock> stored = new ArrayList<>();
          for (long h : seq) {
            stored.add(new KvEvent.StoredBlock(h, h));
          }
          events.apply(w, new KvEvent.Stored(1, OptionalLong.empty(), stored, StorageTier.values()[random.nextInt(3)]));
        }
        sent.put(w, random.nextInt(3) * 10); // coarse, so that tie-breaks by blocks sent happen
        workingSet.put(w, random.nextInt(2000));
        double perToken = random.nextInt(ordered ? 400 : 5) == 0 ? 0 : 50e-6 * (1 + random.nextInt(4) * 0.01 + random.nextDouble() * 0.3);
        var speed = new WorkerLoad.Speed(
            new dev.tandem.common.PrefillCost(perToken, random.nextBoolean() ? 0 : 1e-9), random.nextInt(3) * 1000L,
            64, 1024 + random.nextInt(2) * 1024, random.nextDouble() * 0.02);
        fleet.add(new WorkerLoad(w, random.nextInt(4), random.nextInt(3) * 16, random.nextInt(400), random.nextInt(4), random.nextInt(2),
            random.nextInt(2000), 1000 + random.nextInt(2000), speed));
      }
      KvSelector selector = new KvSelector(events, approximate, w -> false, sent::get, workingSet::get, cost, 0);
      java.util.Set<WorkerId> ineligible = new java.util.HashSet<>();
      Selection chosen;
      if (ordered) {
        LoadOrder order = new LoadOrder(cost, request.blockSize());
        for (WorkerLoad l : fleet) {
          order.put(l);
          if (random.nextInt(10) == 0 && fleet.size() > 1) {
            ineligible.add(l.workerId());
          }
        }
        if (ineligible.size() == fleet.size()) {
          ineligible.clear();
        }
        fleet = fleet.stream().filter(l -> !ineligible.contains(l.workerId())).toList();
        n = fleet.size();
        chosen = selector.select(request, order, w -> !ineligible.contains(w));
      } else {
        chosen = selector.select(request, fleet);
      }

      // Every candidate priced, by hand.
      Map<WorkerId, Overlap> overlaps = events.overlaps(request.blockHashes());
      KvCost.Scorer scorer = cost.scorer(request, fleet);
      double[] all = new double[n];
      double min = Double.POSITIVE_INFINITY;
      for (int i = 0; i < n; i++) {
        WorkerId w = fleet.get(i).workerId();
        all[i] = scorer.cost(i, overlaps.getOrDefault(w, Overlap.NONE), cost.needsWorkingSets() ? workingSet.get(w) : 0);
        min = Math.min(min, all[i]);
        if (overlaps.getOrDefault(w, Overlap.NONE).blocks() == 0) {
          assertTrue(scorer.lowerBoundWithoutOverlap(i) <= all[i], "the bound is a lower bound");
        }
      }
      double tie = min + Math.abs(min) * cost.tieTolerance();
      int fewestSent = Integer.MAX_VALUE;
      for (int i = 0; i < n; i++) {
        if (all[i] <= tie) {
          fewestSent = Math.min(fewestSent, sent.get(fleet.get(i).workerId()));
          priced++;
        }
      }
      int at = fleet.indexOf(fleet.stream().filter(l -> l.workerId().equals(chosen.worker())).findFirst().orElseThrow());
      assertTrue(all[at] <= tie, "trial " + trial + ": chose a worker costing " + all[at] + ", the minimum is " + min);
      assertEquals(fewestSent, sent.get(chosen.worker()), "trial " + trial + ": the tie-break by blocks sent");
      assertEquals(all[at], chosen.cost(), 1e-12, "the selection reports the chosen worker's cost");
    }
    assertTrue(priced > 300, "ties happened: " + priced);
  }
}
