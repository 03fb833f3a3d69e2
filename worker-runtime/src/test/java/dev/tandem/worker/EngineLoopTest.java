package dev.tandem.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.FinishReason;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.engine.mocker.TimingModel;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The engine's one thread, over the mocker: outputs reach listeners, aborts end requests, refusals fail them. */
class EngineLoopTest {
  private EngineLoop loop;

  private EngineLoop start(TimingModel timing) {
    KvEventLog events = new KvEventLog(100);
    loop = new EngineLoop(new MockerEngine(MockerConfig.defaults().withTiming(timing).withPool(64, 16)), events).start();
    return loop;
  }

  @AfterEach
  void stop() {
    loop.close();
  }

  /** Collects one request's outputs. */
  private static final class Outputs implements EngineLoop.Listener {
    final List<RequestOutput> outputs = new CopyOnWriteArrayList<>();
    final CompletableFuture<RuntimeException> end = new CompletableFuture<>();

    @Override
    public void onOutput(RequestOutput output) {
      outputs.add(output);
      if (output.finished()) {
        end.complete(null);
      }
    }

    @Override
    public void onFailure(RuntimeException error) {
      end.complete(error);
    }

    int tokens() {
      return outputs.stream().mapToInt(o -> o.newTokens().length).sum();
    }
  }

  private static EngineRequest request(String id, int prompt, int maxTokens) {
    return new EngineRequest(id, new int[prompt], SamplingParams.greedy(), StopConditions.maxTokens(maxTokens));
  }

  @Test
  void aRequestRunsToItsLengthAndItsBlocksGoBack() throws Exception {
    EngineLoop l = start(TimingModel.noDelay());
    Outputs o = new Outputs();
    l.submit(request("a", 40, 5), o);
    assertEquals(null, o.end.get(5, TimeUnit.SECONDS));
    assertEquals(5, o.tokens());
    assertEquals(FinishReason.LENGTH, o.outputs.getLast().finishReason());
    assertEquals(40, o.outputs.getFirst().promptTokens());
    assertEquals(0, (int) l.call(e -> e.load().runningRequests()).get(5, TimeUnit.SECONDS));
  }

  @Test
  void anAbortEndsTheRequestWithCancelledAndSaysItFoundIt() throws Exception {
    EngineLoop l = start(TimingModel.realTime());
    Outputs o = new Outputs();
    l.submit(request("long", 40, 900), o);
    assertTrue(l.abort("long").get(5, TimeUnit.SECONDS), "found");
    assertEquals(null, o.end.get(5, TimeUnit.SECONDS));
    assertEquals(FinishReason.CANCELLED, o.outputs.getLast().finishReason());
    assertFalse(l.abort("long").get(5, TimeUnit.SECONDS), "gone after the first abort");
    assertEquals(0, (int) l.call(e -> e.load().kvBlocksUsed()).get(5, TimeUnit.SECONDS), "its blocks were freed");
  }

  @Test
  void aRequestTheEngineRefusesFailsWithTheReason() throws Exception {
    EngineLoop l = start(TimingModel.noDelay());
    Outputs o = new Outputs();
    l.submit(request("huge", 64 * 16 + 1, 1), o); // longer than the whole pool
    RuntimeException e = o.end.get(5, TimeUnit.SECONDS);
    assertInstanceOf(IllegalArgumentException.class, e);
    assertTrue(o.outputs.isEmpty());
    assertTrue(l.isRunning(), "a refusal does not stop the loop");
  }
}
