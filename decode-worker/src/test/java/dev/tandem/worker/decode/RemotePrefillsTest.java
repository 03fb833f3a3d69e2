package dev.tandem.worker.decode;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerRole;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.LoadRequest;
import dev.tandem.proto.worker.v1.RemotePrefill;
import dev.tandem.proto.worker.v1.SamplingParams;
import dev.tandem.proto.worker.v1.StopConditions;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.worker.WorkerServer;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The decode role on its own: a real decode worker (built-in engine on a generated model, the
 * {@code local} transfer backend) whose remote prefill cannot happen prefills locally — the same
 * tokens as a plain local request, the reason on the first chunk, the fallback counted, no block
 * left behind. (Pulls from a live prefill worker are proved end to end in integration-tests.)
 */
class RemotePrefillsTest {
  @TempDir static Path dir;
  private static WorkerServer worker;
  private static ManagedChannel channel;
  private static WorkerGrpc.WorkerBlockingStub stub;

  @BeforeAll
  static void start() throws Exception {
    Path model = dir.resolve("tiny");
    ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 0, model, 0);
    BuiltinConfig config = BuiltinConfig.of(model).withCompute("cpu", 1).withKvCacheBytes(16L << 20);
    worker = WorkerServer.start(
        WorkerServer.Config.local(new WorkerId("decode-test"))
            .withRole(WorkerRole.DECODE, new WorkerServer.KvTransfer("local", "127.0.0.1", Duration.ofSeconds(5))),
        BuiltinEngine.open(config));
    channel = NettyChannelBuilder.forTarget(worker.address()).usePlaintext().build();
    stub = WorkerGrpc.newBlockingStub(channel);
  }

  @AfterAll
  static void stop() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    worker.close();
  }

  private static GenerateRequest.Builder greedy(String id, int tokens, int maxTokens) {
    var b = GenerateRequest.newBuilder().setRequestId(id).setSampling(SamplingParams.newBuilder().setTemperature(0))
        .setStop(StopConditions.newBuilder().setMaxTokens(maxTokens).setIgnoreEos(true));
    IntStream.range(0, tokens).forEach(i -> b.addTokenIds(1 + (i * 7919) % 5000));
    return b;
  }

  private static List<GenerateChunk> run(GenerateRequest request) {
    List<GenerateChunk> chunks = new ArrayList<>();
    stub.generate(request).forEachRemaining(chunks::add);
    return chunks;
  }

  private static int[] tokens(List<GenerateChunk> chunks) {
    return chunks.stream().flatMap(c -> c.getTokenIdsList().stream()).mapToInt(Integer::intValue).toArray();
  }

  private static long fallbacks() {
    return stub.getLoad(LoadRequest.getDefaultInstance()).getRemotePrefillFallbacks();
  }

  @Test
  void anUnreachablePrefillWorkerMeansALocalPrefillWithTheSameTokens() throws Exception {
    int[] local = tokens(run(greedy("local", 40, 6).build()));
    long before = fallbacks();
    var remote = greedy("remote", 40, 6)
        .setRemotePrefill(RemotePrefill.newBuilder().setWorkerAddress("127.0.0.1:1").setWorkerId("gone").setTimeoutMs(2000))
        .build();
    List<GenerateChunk> chunks = run(remote);
    assertArrayEquals(local, tokens(chunks), "greedy: the fallback generates what a local request does");
    assertTrue(!chunks.getFirst().getPrefillFallback().isEmpty(), "the first chunk says it fell back");
    assertEquals("", chunks.getFirst().getPrefillWorkerId());
    assertEquals(before + 1, fallbacks(), "counted in the load report");
    assertEquals(0, (int) worker.loop().call(e -> e.load().kvBlocksUsed()).get(5, TimeUnit.SECONDS));
  }

  @Test
  void aRequestWithNothingToDecodeIsPrefilledHere() {
    var one = greedy("one", 20, 1)
        .setRemotePrefill(RemotePrefill.newBuilder().setWorkerAddress("127.0.0.1:1").setWorkerId("p"))
        .build();
    List<GenerateChunk> chunks = run(one);
    assertEquals(1, tokens(chunks).length);
    assertTrue(chunks.getFirst().getPrefillFallback().contains("max_tokens < 2"), chunks.getFirst().getPrefillFallback());
  }
}
