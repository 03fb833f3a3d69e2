package dev.tandem.worker.prefill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerRole;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.PrefillEvent;
import dev.tandem.proto.worker.v1.PrefillMessage;
import dev.tandem.proto.worker.v1.PrefillRelease;
import dev.tandem.proto.worker.v1.StopConditions;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.worker.WorkerServer;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The prefill role on its own: a real prefill worker (built-in engine on a generated 2-layer
 * model, the in-process {@code local} transfer backend) serving the {@code Prefill} call over gRPC
 * on loopback. The role module is found through ServiceLoader, as in production.
 */
class PrefillCallsTest {
  @TempDir static Path dir;
  private static WorkerServer worker;
  private static ManagedChannel channel;

  @BeforeAll
  static void start() throws Exception {
    Path model = dir.resolve("tiny");
    ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 0, model, 0);
    BuiltinConfig config = BuiltinConfig.of(model).withCompute("cpu", 1).withKvCacheBytes(16L << 20);
    worker = WorkerServer.start(
        WorkerServer.Config.local(new WorkerId("prefill-test"))
            .withRole(WorkerRole.PREFILL, new WorkerServer.KvTransfer("local", "127.0.0.1", Duration.ofSeconds(5))),
        BuiltinEngine.open(config));
    channel = NettyChannelBuilder.forTarget(worker.address()).usePlaintext().build();
  }

  @AfterAll
  static void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    worker.close();
  }

  private static GenerateRequest request(String id, int tokens) {
    var b = GenerateRequest.newBuilder().setRequestId(id).setStop(StopConditions.newBuilder().setMaxTokens(10));
    IntStream.range(0, tokens).forEach(i -> b.addTokenIds(1 + (i * 7919 + id.hashCode()) % 5000));
    return b.build();
  }

  private static int usedBlocks() throws Exception {
    return worker.loop().call(e -> e.load().kvBlocksUsed()).get(5, TimeUnit.SECONDS);
  }

  /** One Prefill call, its events queued as they arrive. */
  private static final class Call implements ClientResponseObserver<PrefillMessage, PrefillEvent> {
    final LinkedBlockingQueue<PrefillEvent> events = new LinkedBlockingQueue<>();
    final CompletableFuture<Status> end = new CompletableFuture<>();
    ClientCallStreamObserver<PrefillMessage> out;

    static Call open() {
      Call c = new Call();
      WorkerGrpc.newStub(channel).prefill(c);
      return c;
    }

    @Override public void beforeStart(ClientCallStreamObserver<PrefillMessage> requestStream) { out = requestStream; }
    @Override public void onNext(PrefillEvent e) { events.add(e); }
    @Override public void onError(Throwable t) { end.complete(Status.fromThrowable(t)); }
    @Override public void onCompleted() { end.complete(Status.OK); }

    PrefillEvent next() throws InterruptedException {
      PrefillEvent e = events.poll(10, TimeUnit.SECONDS);
      assertTrue(e != null, "an event within 10 s");
      return e;
    }
  }

  @Test
  void aPrefillSendsTheLayoutEachLayerAndTheFirstTokenThenHoldsTheBlocksUntilReleased() throws Exception {
    PrefillEndpointView endpoint = PrefillEndpointView.of(worker);
    Call call = Call.open();
    call.out.onNext(PrefillMessage.newBuilder().setCall(request("held", 40)).build());
    PrefillEvent layout = call.next();
    assertTrue(layout.hasLayout(), layout.toString());
    assertEquals(3, layout.getLayout().getBlocksCount(), "40 tokens: 3 blocks");
    assertEquals(2, layout.getLayout().getLayerKeysCount(), "one key region per layer");
    assertEquals("local", layout.getLayout().getTransferBackend());
    assertEquals(0, call.next().getLayerReady().getLayer());
    assertEquals(1, call.next().getLayerReady().getLayer());
    PrefillEvent done = call.next();
    assertTrue(done.hasDone(), done.toString());
    assertEquals(40, done.getDone().getPromptTokens());
    assertEquals(3, usedBlocks(), "held for the decode worker");
    assertEquals(1, endpoint.inProgress());
    call.out.onNext(PrefillMessage.newBuilder().setRelease(PrefillRelease.getDefaultInstance()).build());
    assertEquals(Status.Code.OK, call.end.get(10, TimeUnit.SECONDS).getCode());
    awaitFree();
    assertEquals(0, endpoint.inProgress());
  }

  @Test
  void aCallerThatGoesAwayIsCountedAndItsBlocksGoBack() throws Exception {
    PrefillEndpointView endpoint = PrefillEndpointView.of(worker);
    long before = endpoint.abandoned();
    Call call = Call.open();
    call.out.onNext(PrefillMessage.newBuilder().setCall(request("gone", 40)).build());
    assertTrue(call.next().hasLayout());
    call.out.cancel("decode worker went away", null);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (endpoint.abandoned() == before && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertEquals(before + 1, endpoint.abandoned());
    awaitFree();
    assertEquals(0, endpoint.inProgress());
  }

  @Test
  void aCallCarriesOneRequest() throws Exception {
    Call call = Call.open();
    call.out.onNext(PrefillMessage.newBuilder().setCall(request("one", 20)).build());
    call.out.onNext(PrefillMessage.newBuilder().setCall(request("two", 20)).build());
    Status status = call.end.get(10, TimeUnit.SECONDS);
    assertEquals(Status.Code.INVALID_ARGUMENT, status.getCode());
    assertTrue(status.getDescription().contains("one request"), status.toString());
    awaitFree();
  }

  private static void awaitFree() throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (usedBlocks() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertEquals(0, usedBlocks(), "every block back in the pool");
  }

  /** The worker's prefill endpoint (this module's {@link PrefillCalls}, found by ServiceLoader). */
  private record PrefillEndpointView(dev.tandem.worker.role.PrefillEndpoint endpoint) {
    static PrefillEndpointView of(WorkerServer w) {
      assertTrue(w.prefillEndpoint() instanceof PrefillCalls, "the prefill role came from this module");
      return new PrefillEndpointView(w.prefillEndpoint());
    }

    int inProgress() {
      return endpoint.inProgress();
    }

    long abandoned() {
      return endpoint.abandoned();
    }
  }
}
