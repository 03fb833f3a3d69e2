package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.RemotePrefillTarget;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerRole;
import dev.tandem.router.TokenListener;
import dev.tandem.proto.worker.v1.KvLayout;
import dev.tandem.proto.worker.v1.LayerReady;
import dev.tandem.proto.worker.v1.PrefillEvent;
import dev.tandem.proto.worker.v1.PrefillMessage;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerClient;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferBackends;
import dev.tandem.transfer.ucx.UcxBackendProvider;
import dev.tandem.worker.WorkerServer;
import dev.tandem.worker.WorkerKvTransfer;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.AfterParameterizedClassInvocation;
import org.junit.jupiter.params.BeforeParameterizedClassInvocation;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What happens when the other side of a disaggregated request fails: a prefill worker that is
 * gone, dies mid-transfer, or stalls makes the decode worker prefill the request itself (same
 * tokens, a fallback counted, nothing leaked, nothing hung); a decode worker that dies gives the
 * client a clean error.
 */
@org.junit.jupiter.api.Tag("e2e")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@ParameterizedClass(name = "over {0}")
@ValueSource(strings = {"tcp", "ucx"})
class DisaggregationFaultsTest {
  @TempDir static Path dir;
  private static LocalDeployment deployment;
  private static WorkerClient decode;
  @Parameter String backend;
  private Server fake;
  private TransferAgent fakeAgent;
  private Arena fakeMemory;

  @BeforeParameterizedClassInvocation
  static void start(String backend) throws Exception {
    if (backend.equals("ucx")) {
      var ucx = new UcxBackendProvider();
      assumeTrue(ucx.isAvailable(), ucx.unavailableReason());
    }
    Path model = dir.resolve("tiny");
    ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 0, model, 0);
    BuiltinConfig config = BuiltinConfig.of(model).withCompute("cpu", 1).withKvCacheBytes(32L << 20);
    deployment = LocalDeployment.start(
        new LocalDeployment.Spec(1, () -> BuiltinEngine.open(config), ModelFiles.fromDirectory(model), 16,
                Router.Config.of("kv").withSplit(new SplitPolicy(SplitPolicy.Mode.ALWAYS, 1)),
                new FrontendServer.Config("127.0.0.1", 0, 1 << 20))
            .withDisaggregation(1, new WorkerServer.KvTransfer(backend, "127.0.0.1", Duration.ofSeconds(30)), false));
    decode = deployment.router().pool().all().stream().filter(w -> !w.isPrefillOnly()).findFirst().orElseThrow();
  }

  @AfterParameterizedClassInvocation
  static void stop() {
    if (deployment != null) {
      deployment.close();
      deployment = null;
    }
  }

  @AfterEach
  void nothingLeaks() throws Exception {
    if (fake != null) {
      fake.shutdownNow();
    }
    if (fakeAgent != null) {
      fakeAgent.close();
    }
    if (fakeMemory != null) {
      fakeMemory.close();
    }
    TestDeployments.assertPoolsFull(deployment);
  }

  private static GenerationRequest remote(int[] prompt, String address, int timeoutMs) {
    return DisaggregationTest.greedy("r" + System.nanoTime(), prompt, 10)
        .withRemotePrefill(new RemotePrefillTarget(address, new dev.tandem.common.WorkerId("fake"), timeoutMs));
  }

  /** The reference: the same decode worker prefilling the prompt itself. */
  private static int[] local(int[] prompt) throws Exception {
    return DisaggregationTest.generate(decode, DisaggregationTest.greedy("ref" + System.nanoTime(), prompt, 10)).tokens();
  }

  private static long fallbacks() {
    return decode.lastLoadReport().remotePrefillFallbacks();
  }

  private static void awaitFallbacks(long atLeast) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (fallbacks() < atLeast && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(fallbacks() >= atLeast, "fallbacks reported in the load: " + fallbacks());
  }

  @Test
  void unreachablePrefillWorkerFallsBackToLocalPrefill() throws Exception {
    int[] prompt = DisaggregationTest.prompt(40, 1);
    long before = fallbacks();
    var r = DisaggregationTest.generate(decode, remote(prompt, "127.0.0.1:1", 0));
    assertArrayEquals(local(prompt), r.tokens());
    assertTrue(r.first().origin().prefillFallback().contains("fake"), r.first().origin().prefillFallback());
    awaitFallbacks(before + 1);
  }

  /**
   * A fake prefill worker that announces real-looking KV and layer 0, then dies: its transfer agent
   * and gRPC server go away mid-transfer.
   */
  @Test
  void prefillWorkerDyingMidTransferFallsBackWithoutLeaking() throws Exception {
    int[] prompt = DisaggregationTest.prompt(40, 2);
    WorkerDescription reg = decode.description();
    int layers = reg.numLayers();
    long blockBytes = reg.kvBytesPerToken() * reg.blockSize() / (2L * layers);
    int blocks = (prompt.length + 15) / 16;
    fakeMemory = Arena.ofShared();
    fakeAgent = TransferBackends.select(backend).createAgent("127.0.0.1");
    KvLayout.Builder layout = KvLayout.newBuilder().setBlockBytes(blockBytes).setKvCacheDtype(reg.kvCacheDtype()).setTransferBackend(backend);
    for (int l = 0; l < layers; l++) {
      MemoryDescriptor k = fakeAgent.register(fakeMemory.allocate(blocks * blockBytes));
      MemoryDescriptor v = fakeAgent.register(fakeMemory.allocate(blocks * blockBytes));
      layout.addLayerKeys(WorkerKvTransfer.toProto(k)).addLayerValues(WorkerKvTransfer.toProto(v));
    }
    for (int b = 0; b < blocks; b++) {
      layout.addBlocks(b);
    }
    fake = fakePrefillWorker(events -> {
      events.onNext(PrefillEvent.newBuilder().setLayout(layout).build());
      // Dies: the agent goes first, then the announced layer's read has nothing to read.
      fakeAgent.close();
      events.onNext(PrefillEvent.newBuilder().setLayerReady(LayerReady.newBuilder().setLayer(0)).build());
      Thread.ofVirtual().start(() -> fake.shutdownNow());
    });
    long before = fallbacks();
    var r = DisaggregationTest.generate(decode, remote(prompt, "127.0.0.1:" + fake.getPort(), 0));
    assertArrayEquals(local(prompt), r.tokens());
    assertTrue(!r.first().origin().prefillFallback().isEmpty(), "the first chunk says the prefill fell back");
    awaitFallbacks(before + 1);
  }

  /**
   * A prefill worker whose keys were rotated otherwise (a LongRoPE model served with a context on
   * the other side of its original one picks the other factor set): its KV would decode into wrong
   * tokens without an error, so the decode worker refuses the layout before reading anything and
   * prefills here, saying why.
   */
  @Test
  void keysRotatedOtherwiseAreRefusedAndPrefilledHere() throws Exception {
    int[] prompt = DisaggregationTest.prompt(40, 4);
    WorkerDescription reg = decode.description();
    long blockBytes = reg.kvBytesPerToken() * reg.blockSize() / (2L * reg.numLayers());
    KvLayout.Builder layout = KvLayout.newBuilder().setBlockBytes(blockBytes).setKvCacheDtype(reg.kvCacheDtype())
        .setTransferBackend(backend).setKeyRotation("longrope-long");
    fake = fakePrefillWorker(events -> events.onNext(PrefillEvent.newBuilder().setLayout(layout).build()));
    long before = fallbacks();
    var r = DisaggregationTest.generate(decode, remote(prompt, "127.0.0.1:" + fake.getPort(), 0));
    assertArrayEquals(local(prompt), r.tokens());
    String reason = r.first().origin().prefillFallback();
    assertTrue(reason.contains("LongRoPE's long factors") && reason.contains("the model's one rotation")
        && reason.contains("--max-context-length"), reason);
    awaitFallbacks(before + 1);
  }

  @Test
  void stalledPrefillWorkerIsBoundedByTheTransferTimeout() throws Exception {
    int[] prompt = DisaggregationTest.prompt(24, 3);
    fake = fakePrefillWorker(events -> {}); // accepts the call, never answers
    long t0 = System.nanoTime();
    var r = DisaggregationTest.generate(decode, remote(prompt, "127.0.0.1:" + fake.getPort(), 500));
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertArrayEquals(local(prompt), r.tokens());
    assertTrue(r.first().origin().prefillFallback().contains("longer than"), r.first().origin().prefillFallback());
    assertTrue(seconds < 20, "fell back after the 0.5 s bound, not a hang: " + seconds + " s");
  }

  @Test
  void clientGoingAwayDuringTheRemotePrefillFreesBlocksOnBothSides() throws Exception {
    var prefill = deployment.workers().stream().filter(w -> w.prefillEndpoint() != null).findFirst().orElseThrow().prefillEndpoint();
    long abandonedBefore = prefill.abandoned();
    int[] prompt = DisaggregationTest.prompt(600, 4);
    List<TokenChunk> chunks = java.util.Collections.synchronizedList(new ArrayList<>());
    var call = deployment.router().generate(DisaggregationTest.greedy("gone", prompt, 200), new TokenListener() {
      @Override public void onChunk(TokenChunk chunk) { chunks.add(chunk); }
      @Override public void onError(GenerationException error) {}
      @Override public void onCompleted() {}
    });
    // Cancel while the prefill worker holds the call (computing, or holding blocks for the pull).
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (prefill.inProgress() == 0 && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertTrue(prefill.inProgress() > 0, "the prefill worker took the call");
    call.cancel("client went away");
    deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while ((prefill.inProgress() > 0 || prefill.abandoned() == abandonedBefore) && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertEquals(abandonedBefore + 1, prefill.abandoned(), "the cancel reached the prefill worker, which dropped its call");
    assertEquals(0, prefill.inProgress(), "no prefill call left behind");
    TestDeployments.assertPoolsFull(deployment); // both pools full again (checked once more after the test)
  }

  @Test
  void decodeWorkerDyingGivesTheClientAnError() throws Exception {
    Path model = dir.resolve("tiny");
    BuiltinConfig config = BuiltinConfig.of(model).withCompute("cpu", 1).withKvCacheBytes(16L << 20);
    WorkerServer doomed = WorkerServer.start(
        WorkerServer.Config.local(new dev.tandem.common.WorkerId("doomed"))
            .withRole(WorkerRole.DECODE,
                new WorkerServer.KvTransfer(backend, "127.0.0.1", Duration.ofSeconds(5))),
        BuiltinEngine.open(config));
    try (WorkerClient client = WorkerClient.connect(doomed.address(), Duration.ofSeconds(10))) {
      CompletableFuture<Throwable> error = new CompletableFuture<>();
      CompletableFuture<Void> firstChunk = new CompletableFuture<>();
      client.generate(DisaggregationTest.greedy("long", DisaggregationTest.prompt(20, 5), 5000), new TokenListener() {
        @Override public void onChunk(TokenChunk chunk) { firstChunk.complete(null); }
        @Override public void onError(GenerationException e) { error.complete(e); }
        @Override public void onCompleted() { error.complete(null); }
      });
      firstChunk.get(30, TimeUnit.SECONDS);
      doomed.close();
      Throwable e = error.get(30, TimeUnit.SECONDS);
      assertTrue(e != null, "the stream ended in an error, not a normal completion");
    }
  }

  interface OnCall {
    void accept(StreamObserver<PrefillEvent> events) throws Exception;
  }

  private static Server fakePrefillWorker(OnCall onCall) throws Exception {
    return NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(new WorkerGrpc.WorkerImplBase() {
          @Override
          public StreamObserver<PrefillMessage> prefill(StreamObserver<PrefillEvent> events) {
            return new StreamObserver<>() {
              @Override
              public void onNext(PrefillMessage m) {
                if (m.hasCall()) {
                  try {
                    onCall.accept(events);
                  } catch (Exception e) {
                    throw new IllegalStateException(e);
                  }
                }
              }

              @Override public void onError(Throwable t) {}

              @Override public void onCompleted() {}
            };
          }
        })
        .build()
        .start();
  }
}
