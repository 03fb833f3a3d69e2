package dev.tandem.router.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.KvEvent;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StorageTier;
import dev.tandem.common.WorkerId;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.KvEventBatch;
import dev.tandem.proto.worker.v1.KvEventsRequest;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import dev.tandem.router.Route;
import dev.tandem.wire.ToWire;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The router's KV event subscriptions over in-process gRPC: a fake worker's events fill the index
 * and steer routing; a gap in its event ids makes the router resubscribe after the last one it
 * applied (the worker then replays).
 */
class KvRoutingTest {
  private final List<Server> servers = new ArrayList<>();
  private WorkerPool pool;
  private Router router;
  /** after_event_id of every subscription the fake worker received. */
  private final List<Long> subscriptions = new CopyOnWriteArrayList<>();
  private final List<StreamObserver<KvEventBatch>> streams = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() {
    router.close();
    pool.close();
    servers.forEach(Server::shutdownNow);
  }

  private void start(String... ids) throws Exception {
    for (String id : ids) {
      servers.add(InProcessServerBuilder.forName(id).directExecutor().addService(fake(id)).build().start());
    }
    pool = new WorkerPool(16, Duration.ofSeconds(5), Duration.ofMillis(100),
        name -> InProcessChannelBuilder.forName(name).directExecutor().build());
    for (String id : ids) {
      pool.add(id);
    }
    router = Router.create(pool, Router.Config.of("kv"));
  }

  private WorkerGrpc.WorkerImplBase fake(String id) {
    return new WorkerGrpc.WorkerImplBase() {
      @Override
      public void describe(DescribeRequest r, StreamObserver<WorkerRegistration> out) {
        out.onNext(WorkerRegistration.newBuilder().setWorkerId(id).setBlockSize(16).setModelName("m").build());
        out.onCompleted();
      }

      @Override
      public void watchLoad(WatchLoadRequest r, StreamObserver<LoadReport> out) {
        FakeLoadStream.serve(r, out, () -> LoadReport.newBuilder().setWorkerId(id).setKvBlocksTotal(1000).build(), () -> false);
      }

      @Override
      public void subscribeKvEvents(KvEventsRequest r, StreamObserver<KvEventBatch> out) {
        if (id.equals("holder")) {
          subscriptions.add(r.getAfterEventId());
          streams.add(out);
        }
      }
    };
  }

  private static int[] prompt(int tokens) {
    int[] p = new int[tokens];
    for (int i = 0; i < p.length; i++) {
      p[i] = 500 + i;
    }
    return p;
  }

  /** The worker stored the first {@code blocks} full blocks of {@code prompt}, as event {@code id}. */
  private static KvEvent stored(long id, int[] prompt, int blocks) {
    long[] local = BlockHasher.localHashes(prompt, 16);
    long[] seq = BlockHasher.chainAll(local);
    List<KvEvent.StoredBlock> list = new ArrayList<>();
    for (int i = 0; i < blocks; i++) {
      list.add(new KvEvent.StoredBlock(seq[i], local[i]));
    }
    return new KvEvent.Stored(id, OptionalLong.empty(), list, StorageTier.DEVICE);
  }

  private static KvEventBatch batch(boolean snapshot, KvEvent... events) {
    var b = KvEventBatch.newBuilder().setWorkerId("holder").setSnapshot(snapshot);
    for (KvEvent e : events) {
      b.addEvents(ToWire.kvEvent(e));
    }
    return b.build();
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
      Thread.sleep(5);
    }
  }

  @Test
  void eventsFillTheIndexAndSendAPrefixToItsHolder() throws Exception {
    start("holder", "other");
    await(() -> streams.size() == 1, "the router subscribed");
    assertEquals(0L, subscriptions.getFirst(), "a new router starts from a snapshot");
    int[] p = prompt(160);
    streams.getFirst().onNext(batch(true, stored(1, p, 10)));
    await(() -> router.kv().orElseThrow().index().blockCount() == 10, "10 blocks indexed");
    for (int i = 0; i < 3; i++) {
      Route r = router.route(new GenerationRequest("r" + i, p, SamplingParams.greedy(), StopConditions.maxTokens(1)), null);
      r.release();
      assertEquals(new WorkerId("holder"), r.worker());
      assertEquals(10, r.predictedOverlapBlocks());
    }
  }

  @Test
  void aGapInEventIdsResubscribesAfterTheLastAppliedEvent() throws Exception {
    start("holder");
    await(() -> streams.size() == 1, "the router subscribed");
    int[] p = prompt(64);
    streams.getFirst().onNext(batch(true, stored(1, p, 1)));
    streams.getFirst().onNext(batch(false, stored(2, p, 2)));
    await(() -> router.kv().orElseThrow().lastEventId(new WorkerId("holder")) == 2, "events 1 and 2 applied");
    streams.getFirst().onNext(batch(false, stored(5, p, 4))); // 3 and 4 never came
    await(() -> subscriptions.size() == 2, "a second subscription");
    assertEquals(2L, subscriptions.get(1), "replay asked for after the last applied event");
    assertEquals(1, router.kv().orElseThrow().eventGaps());
    assertEquals(2, router.kv().orElseThrow().index().blockCount(), "the event after the gap was not applied");
  }
}
