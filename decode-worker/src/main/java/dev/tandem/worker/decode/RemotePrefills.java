package dev.tandem.worker.decode;

import dev.tandem.engine.EngineRequest;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.LinkFigures;
import dev.tandem.proto.worker.v1.RemotePrefill;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import dev.tandem.transfer.LinkProbe;
import dev.tandem.wire.FromWire;
import dev.tandem.worker.EngineLoop;
import dev.tandem.worker.WorkerKvTransfer;
import dev.tandem.worker.role.PrefillSink;
import dev.tandem.worker.role.RemotePrefillClient;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import dev.tandem.common.InternalTls;
import dev.tandem.wire.GrpcTls;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decode side of disaggregated serving: for a request sent with {@code remote_prefill}, it
 * allocates the prompt's blocks here (reusing cached prefix blocks), calls the prefill worker,
 * pulls each layer's missing blocks as soon as the prefill worker announces that layer, and then
 * lets the engine decode from the first token. If anything fails — the prefill worker is gone,
 * refuses, dies mid-transfer, or the whole exchange exceeds its timeout — the blocks go back and
 * the request is prefilled here instead ({@link #fallbacks()} counts it); the client only sees a
 * slower first token.
 *
 * <p>Thread-safe. Engine work is marshalled onto the engine loop.
 */
public final class RemotePrefills implements RemotePrefillClient {
  private static final Logger log = LoggerFactory.getLogger(RemotePrefills.class);

  private final EngineLoop loop;
  private final WorkerKvTransfer transfer;
  private final ScheduledExecutorService timer;
  private final int[] stopTokenIds;
  private final InternalTls tls; // null: plaintext
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private final Map<String, KvPull> pulls = new ConcurrentHashMap<>();
  private final AtomicLong fallbacks = new AtomicLong();

  /** @param tls the deployment's mutual TLS for calls to prefill workers (null: plaintext) */
  public RemotePrefills(EngineLoop loop, WorkerKvTransfer transfer, ScheduledExecutorService timer, int[] eosTokenIds, InternalTls tls) {
    this.tls = tls;
    this.loop = loop;
    this.transfer = transfer;
    this.timer = timer;
    this.stopTokenIds = eosTokenIds.clone();
  }

  // ---- for KvPull ----

  EngineLoop loop() {
    return loop;
  }

  WorkerKvTransfer transfer() {
    return transfer;
  }

  ScheduledExecutorService timer() {
    return timer;
  }

  /** The model's end-of-sequence tokens (a first token among them ends the request). */
  int[] eosTokenIds() {
    return stopTokenIds;
  }

  /** A pull ended (finished, fell back or cancelled): it is no longer in progress. */
  void ended(String requestId, KvPull pull) {
    pulls.remove(requestId, pull);
  }

  void fellBack() {
    fallbacks.incrementAndGet();
  }

  /** Requests this worker prefilled itself although they came with a remote prefill. */
  @Override
  public long fallbacks() {
    return fallbacks.get();
  }

  /** Pulls in progress. */
  @Override
  public int inProgress() {
    return pulls.size();
  }

  /** Starts serving {@code request} with its prompt prefilled by {@code remote}. */
  @Override
  public void start(EngineRequest request, GenerateRequest wire, RemotePrefill remote, PrefillSink sink) {
    KvPull pull = new KvPull(this, request, wire, remote, sink);
    if (pulls.putIfAbsent(request.requestId(), pull) != null) {
      sink.onFailure(new IllegalArgumentException("request " + request.requestId() + " is already in progress"));
      return;
    }
    pull.begin();
  }

  /**
   * Cancels a pull in progress (the client went away); its blocks go back once no transfer writes
   * into them any more.
   *
   * @return false if no pull of that request is in progress (it may be decoding: abort it there)
   */
  @Override
  public boolean cancel(String requestId) {
    KvPull pull = pulls.get(requestId);
    return pull != null && pull.cancel();
  }

  /**
   * Measures the link to the worker at {@code peerAddress} by reading its probe region over {@code
   * backend} (empty: this worker's primary); both workers must run that backend.
   */
  @Override
  public LinkFigures probe(String peerAddress, String backend) throws Exception {
    WorkerRegistration peer =
        WorkerGrpc.newBlockingStub(channel(peerAddress))
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .describe(DescribeRequest.getDefaultInstance());
    var description = FromWire.description(peer);
    if (description.kvTransferEndpoints().isEmpty()) {
      throw new IllegalArgumentException("worker " + peer.getWorkerId() + " at " + peerAddress + " has no KV transfer agent");
    }
    WorkerKvTransfer.Endpoint mine = transfer.endpoint(backend);
    var theirs = description.endpoint(mine.backend());
    if (theirs == null || theirs.probeRegion() == null) {
      throw new IllegalArgumentException(
          "worker " + peer.getWorkerId() + " runs KV transfer backends "
              + description.kvTransferBackends() + " but not " + mine.backend());
    }
    var ref = theirs.probeRegion();
    var region = WorkerKvTransfer.descriptor(ref);
    // Shaped like this worker's pulls: one read per layer in flight, keys and values each.
    LinkProbe.PullCost cost = LinkProbe.pullShaped(mine.agent(), region, transfer.handoff().layers(), 0.5);
    return LinkFigures.newBuilder()
        .setBackend(cost.backend())
        .setLatencyUs(cost.fixedSeconds() * 1e6)
        .setBytesPerS(transfer.pullBytesPerSecond(mine, cost.bytesPerSecond())) // with the commit's copy to or from the GPU
        .setProbeBytes(region.length())
        .build();
  }

  ManagedChannel channel(String address) {
    return channels.computeIfAbsent(address, a -> {
      var b = NettyChannelBuilder.forTarget(a, GrpcTls.channel(tls));
      if (tls != null) {
        b.overrideAuthority(InternalTls.PEER_NAME); // the peer proves the deployment's name, not its address
      }
      return b.build();
    });
  }

  @Override
  public void close() {
    channels.values().forEach(ManagedChannel::shutdownNow);
    channels.clear();
    Arrays.asList(pulls.values().toArray(KvPull[]::new)).forEach(KvPull::cancel);
  }
}
