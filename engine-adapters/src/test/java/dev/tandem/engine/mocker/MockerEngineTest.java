package dev.tandem.engine.mocker;

import dev.tandem.common.FinishReason;
import static dev.tandem.engine.EngineRuns.runToCompletion;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.KvEvent;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class MockerEngineTest {
  private static MockerConfig config() {
    return MockerConfig.defaults().withTiming(TimingModel.noDelay()).withPool(64, 16);
  }

  private static int[] prompt(int length, int salt) {
    return IntStream.range(0, length).map(i -> 1000 + salt * 7919 + i).toArray();
  }

  private static EngineRequest greedy(String id, int[] prompt, int maxTokens) {
    return new EngineRequest(id, prompt, SamplingParams.greedy(), StopConditions.maxTokens(maxTokens));
  }

  private static SamplingParams seeded(long seed) {
    return new SamplingParams(0.8f, 1f, -1, 0f, OptionalLong.of(seed), 0f, 0f, 1f, -1);
  }

  @Test
  void greedyOutputDependsOnPromptOnlyAndStopsAtMaxTokens() {
    MockerEngine a = new MockerEngine(config());
    MockerEngine b = new MockerEngine(config());
    a.add(greedy("r", prompt(40, 1), 12));
    b.add(greedy("r", prompt(40, 1), 12));
    Map<String, RequestOutput> last = new HashMap<>();
    List<Integer> ta = runToCompletion(a, last).get("r");
    List<Integer> tb = runToCompletion(b, new HashMap<>()).get("r");
    assertEquals(12, ta.size());
    assertEquals(ta, tb);
    assertEquals(FinishReason.LENGTH, last.get("r").finishReason());
    assertTrue(ta.stream().allMatch(t -> t >= 0 && t < 151_643), "only regular tokens");
    assertEquals(0, a.pool().usedBlocks(), "every block is back in the pool");
  }

  @Test
  void seedMakesSamplingReproducible() {
    List<Integer> first = null;
    for (int run = 0; run < 2; run++) {
      MockerEngine e = new MockerEngine(config());
      e.add(new EngineRequest("s", prompt(20, 2), seeded(42), StopConditions.maxTokens(8)));
      List<Integer> tokens = runToCompletion(e, new HashMap<>()).get("s");
      if (first == null) {
        first = tokens;
      } else {
        assertEquals(first, tokens);
      }
    }
    MockerEngine other = new MockerEngine(config());
    other.add(new EngineRequest("s", prompt(20, 2), seeded(43), StopConditions.maxTokens(8)));
    assertNotEquals(first, runToCompletion(other, new HashMap<>()).get("s"));
  }

  @Test
  void aStreamMovedMidWayGoesOnWithTheTokensItWouldHaveDrawn() {
    for (SamplingParams params : List.of(SamplingParams.greedy(), seeded(42))) {
      int[] p = prompt(20, 3);
      MockerEngine first = new MockerEngine(config());
      first.add(new EngineRequest("s", p, params, StopConditions.maxTokens(20)));
      List<Integer> whole = runToCompletion(first, new HashMap<>()).get("s");
      int k = 8;
      int[] moved = IntStream.concat(java.util.Arrays.stream(p), whole.subList(0, k).stream().mapToInt(Integer::intValue)).toArray();
      MockerEngine second = new MockerEngine(config());
      second.add(new EngineRequest("s", moved, params, StopConditions.maxTokens(20 - k), null, 20 - k, null, k));
      assertEquals(whole.subList(k, 20), runToCompletion(second, new HashMap<>()).get("s"), "greedy " + params.isGreedy());
    }
  }

  @Test
  void minTokensDrawsAgainWhereAStopTokenWouldEndTheOutputEarly() {
    int[] p = prompt(20, 4);
    MockerEngine free = new MockerEngine(config());
    free.add(greedy("s", p, 12));
    List<Integer> whole = runToCompletion(free, new HashMap<>()).get("s");
    int stopAt = whole.get(1);
    MockerEngine stopped = new MockerEngine(config());
    stopped.add(new EngineRequest("s", p, SamplingParams.greedy(), new StopConditions(12, new int[] {stopAt}, false)));
    assertEquals(whole.subList(0, whole.indexOf(stopAt) + 1), runToCompletion(stopped, new HashMap<>()).get("s"));
    MockerEngine held = new MockerEngine(config());
    held.add(new EngineRequest("s", p, SamplingParams.greedy(), new StopConditions(12, new int[] {stopAt}, false, 12)));
    List<Integer> tokens = runToCompletion(held, new HashMap<>()).get("s");
    assertEquals(12, tokens.size());
    assertFalse(tokens.contains(stopAt), tokens.toString());
  }

  @Test
  void byPriorityTheQueueAdmitsLowerValuesFirstAndPreemptsTheLastInThatOrder() {
    int[] priorities = {3, 1, 2, 1};
    for (boolean byPriority : new boolean[] {false, true}) {
      MockerEngine e = new MockerEngine(config().withBatching(1, 8192, true));
      if (byPriority) {
        e.scheduleByPriority();
      }
      assertEquals(byPriority, e.info().features().contains(dev.tandem.engine.EngineInfo.Feature.PRIORITY), "it says so");
      for (int i = 0; i < priorities.length; i++) {
        e.add(new EngineRequest("p" + i, prompt(20, 30 + i), SamplingParams.greedy(), StopConditions.maxTokens(2), null, 2, null, 0,
            priorities[i]));
      }
      assertEquals(byPriority ? List.of("p1", "p3", "p2", "p0") : List.of("p0", "p1", "p2", "p3"), finishOrder(e),
          byPriority ? "lower priority value first, ties by arrival" : "first come, first served");
    }
    // 8 blocks of 16 tokens cannot hold both streams (30 + 40 tokens each): one is preempted. First
    // come, first served, it is the newer ("urgent", which arrives once "batch" runs); by priority,
    // the one of higher value ("batch").
    for (boolean byPriority : new boolean[] {false, true}) {
      MockerEngine e = new MockerEngine(config().withPool(8, 16));
      if (byPriority) {
        e.scheduleByPriority();
      }
      e.add(new EngineRequest("batch", prompt(30, 40), SamplingParams.greedy(), StopConditions.maxTokens(40), null, 40, null, 0, 5));
      e.step();
      e.add(new EngineRequest("urgent", prompt(30, 41), SamplingParams.greedy(), StopConditions.maxTokens(40), null, 40, null, 0, 0));
      assertEquals(byPriority ? List.of("urgent", "batch") : List.of("batch", "urgent"), finishOrder(e));
      assertTrue(e.preemptions() > 0);
      assertEquals(0, e.pool().usedBlocks());
    }
  }

  private static List<String> finishOrder(MockerEngine e) {
    List<String> order = new java.util.ArrayList<>();
    while (e.hasWork()) {
      for (RequestOutput o : e.step()) {
        if (o.finished()) {
          order.add(o.requestId());
        }
      }
    }
    return order;
  }

  @Test
  void secondRequestWithSamePrefixHitsCacheAndStoredEventsAreChained() {
    MockerEngine e = new MockerEngine(config());
    List<KvEvent> events = new ArrayList<>();
    e.setEventSink(events::add);
    int[] p = prompt(64, 3);
    e.add(greedy("a", p, 1));
    Map<String, RequestOutput> last = new HashMap<>();
    runToCompletion(e, last);
    assertEquals(0, last.get("a").cachedTokens());
    long storedBlocks = events.stream().filter(KvEvent.Stored.class::isInstance)
        .mapToLong(ev -> ((KvEvent.Stored) ev).blocks().size()).sum();
    assertEquals(4, storedBlocks, "64 prompt tokens = 4 full blocks");

    e.add(greedy("b", p, 1));
    runToCompletion(e, last);
    // The whole prompt is cached but one token must be recomputed to draw the next: 3 blocks.
    assertEquals(48, last.get("b").cachedTokens());
    for (int i = 1; i < events.size(); i++) {
      assertEquals(events.get(i - 1).eventId() + 1, events.get(i).eventId(), "event ids are dense");
    }
  }

  @Test
  void tokenBudgetChunksLongPrefill() {
    MockerEngine e = new MockerEngine(config().withBatching(8, 32, true));
    e.add(greedy("long", prompt(100, 4), 2));
    int stepsBeforeFirstToken = 0;
    while (true) {
      List<RequestOutput> out = e.step();
      stepsBeforeFirstToken++;
      if (!out.isEmpty()) {
        break;
      }
    }
    assertEquals(4, stepsBeforeFirstToken, "100 tokens at 32 per step take 4 steps");
    assertEquals(7, e.load().kvBlocksUsed(), "7 blocks of 16 hold the 100-token prompt");
  }

  @Test
  void maxNumSeqsBoundsTheRunningBatch() {
    MockerEngine e = new MockerEngine(config().withBatching(2, 8192, true));
    for (int i = 0; i < 5; i++) {
      e.add(greedy("r" + i, prompt(10, 10 + i), 4));
    }
    List<RequestOutput> out = e.step();
    assertEquals(2, out.size());
    assertEquals(2, e.load().runningRequests());
    assertEquals(3, e.load().waitingRequests());
    runToCompletion(e, new HashMap<>());
    assertEquals(0, e.pool().usedBlocks());
  }

  @Test
  void preemptsByRecomputeWhenBlocksRunOutAndStillFinishesEverything() {
    // 8 blocks of 16 = 128 tokens; three requests of 30 + 40 tokens need 15 blocks in all.
    MockerEngine e = new MockerEngine(config().withPool(8, 16));
    for (int i = 0; i < 3; i++) {
      e.add(greedy("p" + i, prompt(30, 20 + i), 40));
    }
    Map<String, RequestOutput> last = new HashMap<>();
    Map<String, List<Integer>> tokens = runToCompletion(e, last);
    for (int i = 0; i < 3; i++) {
      assertEquals(40, tokens.get("p" + i).size());
    }
    // Preemption must not change greedy output.
    MockerEngine alone = new MockerEngine(config());
    alone.add(greedy("p2", prompt(30, 22), 40));
    assertEquals(runToCompletion(alone, new HashMap<>()).get("p2"), tokens.get("p2"));
    assertEquals(0, e.pool().usedBlocks());
  }

  @Test
  void abortReturnsBlocksAndUnknownAbortIsFalse() {
    MockerEngine e = new MockerEngine(config());
    e.add(greedy("x", prompt(50, 5), 100));
    e.step();
    assertTrue(e.pool().usedBlocks() > 0);
    assertTrue(e.abort("x"));
    assertFalse(e.abort("x"));
    assertFalse(e.hasWork());
    assertEquals(0, e.pool().usedBlocks());
  }

  @Test
  void stopTokenEndsWithStop() {
    MockerEngine probe = new MockerEngine(config());
    probe.add(greedy("q", prompt(12, 6), 5));
    List<Integer> tokens = runToCompletion(probe, new HashMap<>()).get("q");
    MockerEngine e = new MockerEngine(config());
    e.add(new EngineRequest("q", prompt(12, 6), SamplingParams.greedy(),
        new StopConditions(5, new int[] {tokens.get(2)}, false)));
    Map<String, RequestOutput> last = new HashMap<>();
    assertEquals(tokens.subList(0, 3), runToCompletion(e, last).get("q"));
    assertEquals(FinishReason.STOP, last.get("q").finishReason());
  }

  @Test
  void refusesRequestsThatCanNeverFit() {
    MockerEngine e = new MockerEngine(config().withPool(4, 16).withMaxContextLength(1000));
    assertEquals(64, e.info().maxContextLength(), "the context is capped at what the pool holds");
    var big = assertThrows(IllegalArgumentException.class, () -> e.add(greedy("big", prompt(60, 7), 10)));
    assertTrue(big.getMessage().contains("maximum context length is 64"), big.getMessage());
    e.add(greedy("fits", prompt(60, 7), 4));
    Map<String, RequestOutput> last = new HashMap<>();
    assertEquals(4, runToCompletion(e, last).get("fits").size());
  }

  @Test
  void refusesEmbeddingsItHasNoHiddenStatesFor() {
    MockerEngine e = new MockerEngine(config());
    assertFalse(e.info().features().contains(dev.tandem.engine.EngineInfo.Feature.EMBEDDINGS));
    var refused = assertThrows(IllegalArgumentException.class, () -> e.add(greedy("e", prompt(20, 3), 1).withEmbedding()));
    assertTrue(refused.getMessage().contains("no hidden states"), refused.getMessage());
  }

  @Test
  void stepTakesTheModelledTimeEvenWhenItsThreadIsUnparked() throws Exception {
    // 1000-token prefill at speedup 10: (16.5 + 15.2 + 0.4) ms / 10 = 3.2 ms.
    MockerEngine e = new MockerEngine(config().withTiming(new TimingModel(10)));
    e.add(greedy("t", prompt(1000, 8), 1));
    Thread stepper = Thread.currentThread();
    Thread waker = Thread.ofPlatform().start(() -> {
      for (int i = 0; i < 200; i++) {
        java.util.concurrent.locks.LockSupport.unpark(stepper);
        java.util.concurrent.locks.LockSupport.parkNanos(10_000);
      }
    });
    long t0 = System.nanoTime();
    e.step();
    long took = System.nanoTime() - t0;
    waker.join();
    long modelled = new TimingModel(10).stepNanos(1000, 0, 0);
    assertTrue(took >= modelled, "step took " + took + " ns, the model says " + modelled);
  }

  @Test
  void timingModelMatchesDynamoPolynomials() {
    assertEquals(16.50142 + 0.01518344 * 1000 + 4.209989e-7 * 1e6, TimingModel.prefillMs(1000), 1e-9);
    assertEquals(5.74, TimingModel.decodeMs(0), 1e-12);
    assertEquals(-25.74 + 54.01 + 5.74, TimingModel.decodeMs(1), 1e-12);
    assertEquals(0, TimingModel.noDelay().stepNanos(1000, 4, 0.5));
    long real = TimingModel.realTime().stepNanos(1000, 0, 0);
    assertEquals(real / 10, new TimingModel(10).stepNanos(1000, 0, 0), 1);
    assertArrayEquals(new long[] {0}, new long[] {TimingModel.noDelay().stepNanos(0, 0, 0)});
  }
}
