package dev.tandem.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerId;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.proto.worker.v1.CancelRequest;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.FinishReason;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.KvEvent;
import dev.tandem.proto.worker.v1.KvEventBatch;
import dev.tandem.proto.worker.v1.KvEventsRequest;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.LoadRequest;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import io.grpc.stub.StreamObserver;
import dev.tandem.proto.worker.v1.ModelCardRequest;
import dev.tandem.proto.worker.v1.StopConditions;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The worker API over real gRPC on loopback, with the mocker engine. */
class WorkerServiceTest {
  private WorkerServer worker;
  private ManagedChannel channel;
  private MockerEngine engine;

  private WorkerGrpc.WorkerBlockingStub start(TimingModel timing, int ringCapacity) {
    engine = new MockerEngine(MockerConfig.defaults().withTiming(timing).withPool(256, 16));
    var base = WorkerServer.Config.local(new WorkerId("w-test"));
    var config = base.withEventRing(ringCapacity);
    worker = WorkerServer.start(config, engine);
    channel = NettyChannelBuilder.forTarget(worker.address()).usePlaintext().maxInboundMessageSize(64 << 20).build();
    return WorkerGrpc.newBlockingStub(channel);
  }

  @AfterEach
  void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    worker.close();
  }

  private static GenerateRequest request(String id, int promptLength, int salt, int maxTokens) {
    var b = GenerateRequest.newBuilder().setRequestId(id)
        .setStop(StopConditions.newBuilder().setMaxTokens(maxTokens));
    IntStream.range(0, promptLength).forEach(i -> b.addTokenIds(100 + salt * 1000 + i));
    return b.build();
  }

  private int usedBlocks() throws Exception {
    return worker.loop().call(e -> e.load().kvBlocksUsed()).get(5, TimeUnit.SECONDS);
  }

  @Test
  void describesItselfAndShipsTheTokenizer() {
    var stub = start(TimingModel.noDelay(), 100);
    var reg = stub.describe(DescribeRequest.getDefaultInstance());
    assertEquals("w-test", reg.getWorkerId());
    assertEquals(16, reg.getBlockSize());
    assertEquals(256, reg.getTotalKvBlocks());
    assertEquals("mocker", reg.getEngine());
    assertTrue(reg.getSupportedFeaturesList().contains("seed"));
    assertFalse(reg.getSupportedFeaturesList().contains("logprobs"));
    var card = stub.getModelCard(ModelCardRequest.getDefaultInstance());
    assertTrue(card.getTokenizerJson().size() > 1_000_000);
    assertTrue(card.getTokenizerConfigJson().toStringUtf8().contains("chat_template"));
  }

  /**
   * A load stream reports a change at once, not at its next tick: with a tick a minute apart, a
   * request's start and its end still reach the watcher within moments (else a router reads the
   * finished request as running until the tick, and predicts the next one there too slow).
   */
  @Test
  void aLoadStreamReportsAChangeBeforeItsNextTick() throws Exception {
    var stub = start(TimingModel.realTime(), 100); // ~6 ms a token: the request runs long enough to be seen running
    LinkedBlockingQueue<LoadReport> reports = new LinkedBlockingQueue<>();
    WorkerGrpc.newStub(channel).watchLoad(WatchLoadRequest.newBuilder().setIntervalMs(60_000).build(), new StreamObserver<>() {
      @Override
      public void onNext(LoadReport r) {
        reports.add(r);
      }

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {}
    });
    assertEquals(0, reports.poll(5, TimeUnit.SECONDS).getActiveRequests(), "the first tick, at once");
    stub.generate(request("l1", 40, 4, 30)).forEachRemaining(c -> {});
    boolean sawRunning = false;
    LoadReport r;
    while ((r = reports.poll(2, TimeUnit.SECONDS)) != null && !(sawRunning && r.getActiveRequests() == 0)) {
      sawRunning |= r.getActiveRequests() > 0;
    }
    assertTrue(sawRunning, "the request's start was reported");
    assertTrue(r != null && r.getActiveRequests() == 0, "and its end, long before the next tick");
  }

  @Test
  void streamsTokensAndReturnsBlocks() throws Exception {
    var stub = start(TimingModel.noDelay(), 100);
    List<GenerateChunk> chunks = new ArrayList<>();
    stub.generate(request("g1", 40, 1, 7)).forEachRemaining(chunks::add);
    assertEquals(7, chunks.stream().mapToInt(GenerateChunk::getTokenIdsCount).sum());
    assertEquals(40, chunks.getFirst().getPromptTokens());
    assertEquals("w-test", chunks.getFirst().getWorkerId());
    assertEquals(FinishReason.FINISH_REASON_LENGTH, chunks.getLast().getFinishReason());
    assertEquals(0, usedBlocks());

    List<GenerateChunk> again = new ArrayList<>();
    stub.generate(request("g2", 40, 1, 1)).forEachRemaining(again::add);
    assertEquals(32, again.getFirst().getCachedTokens(), "the 2 full blocks of the prompt are cached");
  }

  @Test
  void cancelRpcStopsTheStreamAndFreesBlocks() throws Exception {
    var stub = start(TimingModel.realTime(), 100);
    Iterator<GenerateChunk> it = stub.generate(request("c1", 64, 2, 4000));
    it.next();
    assertTrue(usedBlocks() > 0);
    assertTrue(stub.cancel(CancelRequest.newBuilder().setRequestId("c1").build()).getFound());
    GenerateChunk last = null;
    while (it.hasNext()) {
      last = it.next();
    }
    assertEquals(FinishReason.FINISH_REASON_CANCELLED, last.getFinishReason());
    assertEquals(0, usedBlocks());
    assertFalse(stub.cancel(CancelRequest.newBuilder().setRequestId("c1").build()).getFound());
  }

  @Test
  void callerGoingAwayAbortsTheRequest() throws Exception {
    var stub = start(TimingModel.realTime(), 100);
    Context.CancellableContext ctx = Context.current().withCancellation();
    Iterator<GenerateChunk> it = ctx.call(() -> stub.generate(request("d1", 64, 3, 4000)));
    it.next();
    ctx.cancel(null);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (usedBlocks() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(0, usedBlocks());
    assertEquals(0, stub.getLoad(LoadRequest.getDefaultInstance()).getActiveRequests());
  }

  @Test
  void invalidRequestIsRefusedWithInvalidArgument() {
    var stub = start(TimingModel.noDelay(), 100);
    var e = assertThrows(StatusRuntimeException.class,
        () -> stub.generate(request("bad", 10, 4, 0)).forEachRemaining(c -> {}));
    assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
    var tooBig = assertThrows(StatusRuntimeException.class,
        () -> stub.generate(request("big", 5000, 4, 1)).forEachRemaining(c -> {}));
    assertTrue(tooBig.getStatus().getDescription().contains("maximum context length"), tooBig.getStatus().getDescription());
  }

  @Test
  void loraLoadsAreRefusedWithoutTheFlagAndByAnEngineWithNoWeights() {
    var stub = start(TimingModel.noDelay(), 100);
    var load = dev.tandem.proto.worker.v1.LoadLoraAdapterRequest.newBuilder().setLoraName("sql").setLoraPath("/adapters/sql").build();
    var off = assertThrows(StatusRuntimeException.class, () -> stub.loadLoraAdapter(load));
    assertEquals(io.grpc.Status.Code.FAILED_PRECONDITION, off.getStatus().getCode());
    assertTrue(off.getStatus().getDescription().contains("--allow-runtime-lora-updating"), off.getStatus().getDescription());
    var unload = dev.tandem.proto.worker.v1.UnloadLoraAdapterRequest.newBuilder().setLoraName("sql").build();
    assertEquals(io.grpc.Status.Code.FAILED_PRECONDITION,
        assertThrows(StatusRuntimeException.class, () -> stub.unloadLoraAdapter(unload)).getStatus().getCode());

    worker.close();
    engine = new MockerEngine(MockerConfig.defaults().withTiming(TimingModel.noDelay()).withPool(256, 16));
    worker = WorkerServer.start(WorkerServer.Config.local(new WorkerId("w-open")).withLoraUpdates(true), engine);
    channel.shutdownNow();
    channel = NettyChannelBuilder.forTarget(worker.address()).usePlaintext().build();
    var open = WorkerGrpc.newBlockingStub(channel);
    var mocker = assertThrows(StatusRuntimeException.class, () -> open.loadLoraAdapter(load));
    assertEquals(io.grpc.Status.Code.FAILED_PRECONDITION, mocker.getStatus().getCode());
    assertTrue(mocker.getStatus().getDescription().contains("applies no LoRA adapters"), mocker.getStatus().getDescription());
    var unknown = assertThrows(StatusRuntimeException.class, () -> open.unloadLoraAdapter(unload));
    assertEquals(io.grpc.Status.Code.NOT_FOUND, unknown.getStatus().getCode());
    assertTrue(unknown.getStatus().getDescription().contains("'sql' is not loaded"), unknown.getStatus().getDescription());
  }

  @Test
  void kvEventsSnapshotThenLiveThenReplayThenSnapshotWhenRangeIsGone() throws Exception {
    var stub = start(TimingModel.noDelay(), 2);
    var async = WorkerGrpc.newStub(channel);
    LinkedBlockingQueue<KvEventBatch> batches = new LinkedBlockingQueue<>();
    var observer = new io.grpc.stub.StreamObserver<KvEventBatch>() {
      public void onNext(KvEventBatch b) { batches.add(b); }
      public void onError(Throwable t) {}
      public void onCompleted() {}
    };
    async.subscribeKvEvents(KvEventsRequest.newBuilder().setAfterEventId(0).build(), observer);
    KvEventBatch first = batches.poll(5, TimeUnit.SECONDS);
    assertTrue(first.getSnapshot());
    assertEquals(KvEvent.KindCase.CLEARED, first.getEvents(0).getKindCase());

    stub.generate(request("e1", 48, 5, 1)).forEachRemaining(c -> {});
    stub.generate(request("e2", 48, 6, 1)).forEachRemaining(c -> {});
    stub.generate(request("e3", 48, 7, 1)).forEachRemaining(c -> {});
    List<KvEvent> live = new ArrayList<>();
    while (live.size() < 3) {
      live.addAll(batches.poll(5, TimeUnit.SECONDS).getEventsList());
    }
    assertEquals(List.of(1L, 2L, 3L), live.stream().map(KvEvent::getEventId).toList());
    assertEquals(3, live.get(0).getStored().getBlocksCount());

    // Event 3 is still in the ring of 2: replay only what follows event 2.
    var replay = stub.subscribeKvEvents(KvEventsRequest.newBuilder().setAfterEventId(2).build()).next();
    assertFalse(replay.getSnapshot());
    assertEquals(3, replay.getEvents(0).getEventId());
    // Event 1 has left the ring: a snapshot of all 9 cached blocks instead.
    var snap = stub.subscribeKvEvents(KvEventsRequest.newBuilder().setAfterEventId(0).build()).next();
    assertTrue(snap.getSnapshot());
    assertEquals(1 + 9, snap.getEventsCount());
    assertEquals(3, snap.getEvents(1).getEventId());
  }
}
