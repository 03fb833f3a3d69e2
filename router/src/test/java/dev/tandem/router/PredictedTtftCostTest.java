package dev.tandem.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.PrefillCost;
import dev.tandem.common.WorkerId;
import dev.tandem.router.index.Overlap;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The predicted-seconds cost against hand-computed cases. */
class PredictedTtftCostTest {
  private static final PrefillCost FAST = new PrefillCost(100e-6, 0); // 100 µs a token, no attention term
  private static final PrefillCost SLOW = new PrefillCost(400e-6, 0);
  private static final PredictedTtftCost COST = PredictedTtftCost.defaults();

  private static RoutingRequest request(int tokens) {
    int[] t = new int[tokens];
    for (int i = 0; i < tokens; i++) {
      t[i] = 7 + i;
    }
    return new RoutingRequest("r", t.length, BlockHasher.sequenceHashes(t, 16), 16);
  }

  /** A worker: in-flight requests and prefill blocks routed there, tokens it reported queued. */
  private static WorkerLoad load(String id, PrefillCost cost, int running, int routedPrefillBlocks, long reportedQueued) {
    return new WorkerLoad(new WorkerId(id), running, routedPrefillBlocks, 0, running, 0, 0, 1000,
        new WorkerLoad.Speed(cost, reportedQueued, 64, 2048, 0));
  }

  private static double seconds(WorkerLoad l, Overlap o) {
    return COST.breakdown(request(320), l, o, 0, PredictedTtftCost.NOMINAL).total();
  }

  /**
   * A model whose layers mostly slide (Gemma 3 1B: 22 of 26 over 512 positions) is priced by what
   * its layers attend to: a long prompt costs far less attention than on a model with the same fit
   * in full, and the order's floor stays under every worker's price.
   */
  @Test
  void aSlidingWindowModelIsPricedByWhatItsLayersAttendTo() {
    PrefillCost fit = new PrefillCost(50e-6, 2e-9, 0);
    PrefillCost.Attention gemma = new PrefillCost.Attention(512, 22.0 / 26);
    RoutingRequest longPrompt = request(8192);
    WorkerLoad full = load("full", fit, 0, 0, 0);
    WorkerLoad sliding = load("sliding", fit.withAttention(gemma), 0, 0, 0);
    double fullSeconds = COST.breakdown(longPrompt, full, Overlap.NONE, 0, PredictedTtftCost.NOMINAL).prefill();
    double slidingSeconds = COST.breakdown(longPrompt, sliding, Overlap.NONE, 0, PredictedTtftCost.NOMINAL).prefill();
    assertEquals(8192 * 50e-6 + 2e-9 * 8192 * 8192 / 2, fullSeconds, 1e-9);
    assertEquals(8192 * 50e-6 + 2e-9 * gemma.attended(0, 8192), slidingSeconds, 1e-9);
    LoadOrder order = new LoadOrder(COST, 16);
    order.put(sliding);
    order.put(load("other", new PrefillCost(60e-6, 3e-9, 0).withAttention(new PrefillCost.Attention(1024, 0.5)), 0, 0, 0));
    double floor = new PrefillCost(order.minPerToken(), order.minPerContextToken(), order.minPerStep(), order.leastAttention())
        .seconds(8192, 0);
    assertEquals(new PrefillCost.Attention(512, 22.0 / 26), order.leastAttention());
    assertTrue(floor <= slidingSeconds + 1e-12, floor + " over " + slidingSeconds);
    order.put(full);
    assertEquals(new PrefillCost.Attention(512, 22.0 / 26), order.leastAttention(), "a worker in full does not raise the bound");
  }

  @Test
  void anIdleWorkerCostsItsPrefillAlone() {
    // 320 tokens, nothing cached, nothing queued, nothing decoding: 320 × 100 µs.
    assertEquals(0.032, seconds(load("a", FAST, 0, 0, 0), Overlap.NONE), 1e-12);
  }

  /**
   * A per-step part counts once for every prefill step the prompt waits through: 3,000 tokens queued
   * and this prompt's 320 in steps of 2,048 tokens are 2 steps; an idle worker takes 1. With a
   * 16.5 ms step, a short cached tail costs the step, not only its tokens.
   */
  @Test
  void aPerStepPartCountsForEveryStepThePromptWaitsThrough() {
    PrefillCost stepped = new PrefillCost(15e-6, 0, 16.5e-3);
    var idle = COST.breakdown(request(320), load("idle", stepped, 0, 0, 0), Overlap.NONE, 0, PredictedTtftCost.NOMINAL);
    assertEquals(16.5e-3 + 320 * 15e-6, idle.prefill(), 1e-12);
    var busy = COST.breakdown(request(320), load("busy", stepped, 0, 0, 3000), Overlap.NONE, 0, PredictedTtftCost.NOMINAL);
    assertEquals(3000 * 15e-6, busy.queue(), 1e-12);
    assertEquals(2 * 16.5e-3 + 320 * 15e-6, busy.prefill(), 1e-12);
    // 19 of the 20 blocks cached: 16 tokens and one step.
    var hit = COST.breakdown(request(320), load("hit", stepped, 0, 0, 0), new Overlap(19, 0, 0), 0, PredictedTtftCost.NOMINAL);
    assertEquals(16.5e-3 + 16 * 15e-6, hit.prefill(), 1e-12);
  }

  @Test
  void aHitCostsOnlyTheUncachedTailAndItsAttentionToTheCachedPart() {
    PrefillCost withAttention = new PrefillCost(100e-6, 1e-8);
    var b = COST.breakdown(request(320), load("a", withAttention, 0, 0, 0), new Overlap(18, 0, 0), 0, PredictedTtftCost.NOMINAL);
    // 18 blocks = 288 cached tokens, 32 uncached: 32 × (100 µs + 10 ns × (288 + 16)).
    assertEquals(32 * (100e-6 + 1e-8 * (288 + 16)), b.prefill(), 1e-12);
    assertEquals(0, b.queue());
    // A host-tier hit counts 0.75 of a block: 18 host blocks credit 13.5 blocks = 216 tokens.
    var host = COST.breakdown(request(320), load("a", FAST, 0, 0, 0), new Overlap(0, 18, 0), 0, PredictedTtftCost.NOMINAL);
    assertEquals((320 - 216) * 100e-6, host.prefill(), 1e-12);
  }

  @Test
  void aBusyWorkerAddsItsQueueAndTheDecodeTokensSharingItsSteps() {
    // 1,000 tokens queued (reported; the router's own 10 blocks = 160 are fewer), 4 streams decoding.
    var b = COST.breakdown(request(320), load("busy", FAST, 4, 10, 1000), Overlap.NONE, 0, PredictedTtftCost.NOMINAL);
    assertEquals(1000 * 100e-6, b.queue(), 1e-12);
    assertEquals(0.032, b.prefill(), 1e-12);
    // ⌈(1000 + 320) / (2048 − 4)⌉ = 1 step carrying 4 decode tokens (no step time measured yet).
    assertEquals(4 * 100e-6, b.decode(), 1e-12);
    // Measured steps of 20 ms: half of the one in progress, then the decode tokens of the step it shares.
    WorkerLoad measured = new WorkerLoad(new WorkerId("m"), 4, 10, 0, 4, 0, 0, 1000, new WorkerLoad.Speed(FAST, 1000, 64, 2048, 0.020));
    assertEquals(0.5 * 0.020 + 4 * 100e-6, COST.breakdown(request(320), measured, Overlap.NONE, 0, PredictedTtftCost.NOMINAL).decode(), 1e-12);
    assertTrue(seconds(load("busy", FAST, 4, 10, 1000), Overlap.NONE) > seconds(load("idle", FAST, 0, 0, 0), Overlap.NONE));
  }

  @Test
  void aFasterWorkerWinsUntilItsQueueOutweighsTheSpeed() {
    WorkerLoad slowIdle = load("slow", SLOW, 0, 0, 0); // 320 × 400 µs = 128 ms
    WorkerLoad fastQueued = load("fast", FAST, 0, 0, 500); // 50 ms queue + 32 ms
    WorkerLoad fastSwamped = load("fast", FAST, 0, 0, 1200); // 120 ms queue + 32 ms
    assertTrue(seconds(fastQueued, Overlap.NONE) < seconds(slowIdle, Overlap.NONE));
    assertTrue(seconds(fastSwamped, Overlap.NONE) > seconds(slowIdle, Overlap.NONE));
  }

  @Test
  void aWorkerWithoutMeasurementsIsCostedAtTheFleetMedian() {
    WorkerLoad unmeasured = load("new", PrefillCost.UNKNOWN, 0, 0, 0);
    List<WorkerLoad> fleet = List.of(load("a", FAST, 0, 0, 0), load("b", SLOW, 0, 0, 0), load("c", SLOW, 0, 0, 0), unmeasured);
    assertEquals(SLOW, PredictedTtftCost.fleetMedian(fleet));
    double[] c = COST.costs(request(320), fleet, new Overlap[] {Overlap.NONE, Overlap.NONE, Overlap.NONE, Overlap.NONE}, new int[4]);
    assertEquals(c[1], c[3], 1e-12, "costed like the median worker");
    assertEquals(PredictedTtftCost.NOMINAL, PredictedTtftCost.fleetMedian(List.of(unmeasured)), "nothing measured: nominal");
  }

  @Test
  void aPlacementThatEvictsCachedPrefixesPaysForHalfTheirRecompute() {
    WorkerLoad full = new WorkerLoad(new WorkerId("full"), 0, 0, 0, 0, 0, 0, 100, new WorkerLoad.Speed(FAST, 0, 64, 2048, 0));
    // 20 new blocks, the worker caches 95 of its 100: 15 evicted × 16 tokens × 100 µs × 0.5.
    var b = COST.breakdown(request(320), full, Overlap.NONE, 95, PredictedTtftCost.NOMINAL);
    assertEquals(15 * 16 * 100e-6 * 0.5, b.evict(), 1e-12);
    assertEquals(0, COST.breakdown(request(320), full, Overlap.NONE, 10, PredictedTtftCost.NOMINAL).evict(), "room: nothing evicted");
  }

  @Test
  void evictionIsWeightedByHowOftenPromptsFindTheirBlocksCached() {
    WorkerLoad full = new WorkerLoad(new WorkerId("full"), 0, 0, 0, 0, 0, 0, 100, new WorkerLoad.Speed(FAST, 0, 64, 2048, 0));
    double whole = COST.breakdown(request(320), full, Overlap.NONE, 95, PredictedTtftCost.NOMINAL).evict();
    assertEquals(whole / 2, COST.withReuse(0.5).breakdown(request(320), full, Overlap.NONE, 95, PredictedTtftCost.NOMINAL).evict(), 1e-12);
    assertEquals(0, COST.withReuse(0).breakdown(request(320), full, Overlap.NONE, 95, PredictedTtftCost.NOMINAL).evict());
    assertEquals(whole, COST.withReuse(Double.NaN).breakdown(request(320), full, Overlap.NONE, 95, PredictedTtftCost.NOMINAL).evict(), 1e-12,
        "no measurement: every evicted block counts");
    assertEquals(0, COST.withReuse(-3).reuse());
    assertEquals(1, COST.withReuse(7).reuse());
    assertThrows(IllegalArgumentException.class, () -> new PredictedTtftCost(0, 0.5, 1.5));
  }

  @Test
  void anItlTargetPenalisesPrefillingBesideStreamsItWouldStall() {
    PredictedTtftCost strict = new PredictedTtftCost(0.010, 0.5);
    WorkerLoad decoding = load("d", FAST, 3, 0, 0);
    // A 320-token step takes 32 ms + 3 decode tokens > 10 ms: three streams stall for the prefill.
    var b = strict.breakdown(request(320), decoding, Overlap.NONE, 0, PredictedTtftCost.NOMINAL);
    assertEquals(3 * 0.032, b.stall(), 1e-12);
    assertEquals(0, strict.breakdown(request(320), load("idle", FAST, 0, 0, 0), Overlap.NONE, 0, PredictedTtftCost.NOMINAL).stall());
    assertEquals(0, COST.breakdown(request(320), decoding, Overlap.NONE, 0, PredictedTtftCost.NOMINAL).stall(), "no target, no penalty");
  }
}
