package dev.tandem.worker.decode;

import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvHandoff;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.KvLayout;
import dev.tandem.proto.worker.v1.PrefillDone;
import dev.tandem.proto.worker.v1.PrefillEvent;
import dev.tandem.proto.worker.v1.PrefillMessage;
import dev.tandem.proto.worker.v1.PrefillRelease;
import dev.tandem.proto.worker.v1.RemotePrefill;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.transfer.BlockRuns;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.worker.EngineLoop;
import dev.tandem.worker.WorkerKvTransfer;
import dev.tandem.worker.role.PrefillOutcome;
import dev.tandem.worker.role.PrefillSink;
import dev.tandem.wire.FromWire;
import dev.tandem.common.FinishReason;
import dev.tandem.common.TokenLogprob;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One remotely prefilled request on the decode worker: allocates the prompt's blocks (reusing
 * cached prefix blocks), calls the prefill worker, pulls each layer's missing blocks as it is
 * announced, commits the import and decodes; on any failure (refused import, the prefill worker
 * gone, a read failing, the timeout) it waits for reads in flight, frees the blocks and prefills
 * locally, telling the client why on the first chunk.
 *
 * <p>Threading: gRPC callbacks on gRPC's threads, read completions on the transfer agent's,
 * engine work marshalled onto the engine loop; the pull's state is guarded by its monitor. Blocks
 * of a failed pull are freed only after every read into them has ended.
 */
final class KvPull implements ClientResponseObserver<PrefillMessage, PrefillEvent> {
  private static final Logger log = LoggerFactory.getLogger(KvPull.class);

  private final RemotePrefills owner;
  private final EngineLoop loop;
  private final WorkerKvTransfer transfer;
  private final ScheduledExecutorService timer;
  private final EngineRequest request;
  private final GenerateRequest wire;
  private final RemotePrefill remote;
  private final PrefillSink sink;
  private final long startNanos = System.nanoTime();
  private final Duration timeout;
  private final WorkerKvTransfer.Endpoint via; // the agent this pull reads with; null: none for the named backend
  private final List<CompletableFuture<Void>> reads = new ArrayList<>();
  private KvHandoff.PendingImport pending;
  private KvLayout layout;
  private PrefillDone done;
  private int layersStarted;
  private long firstLayerNanos;
  private long doneNanos;
  private long bytes;
  private boolean settled;
  private ClientCallStreamObserver<PrefillMessage> call;
  private ScheduledFuture<?> deadline;

  KvPull(RemotePrefills owner, EngineRequest request, GenerateRequest wire, RemotePrefill remote, PrefillSink sink) {
    this.owner = owner;
    this.loop = owner.loop();
    this.transfer = owner.transfer();
    this.timer = owner.timer();
    this.request = request;
    this.wire = wire;
    this.remote = remote;
    this.sink = sink;
    this.timeout = remote.getTimeoutMs() > 0 ? Duration.ofMillis(remote.getTimeoutMs()) : transfer.timeout();
    WorkerKvTransfer.Endpoint endpoint;
    try {
      endpoint = transfer.endpoint(remote.getKvTransferBackend());
    } catch (IllegalArgumentException e) {
      endpoint = null;
    }
    this.via = endpoint;
  }

  void begin() {
    if (request.stop().maxTokens() < 2) {
      fallBack("max_tokens < 2 leaves nothing to decode");
      return;
    }
    if (via == null) {
      fallBack("this worker runs no '" + remote.getKvTransferBackend() + "' transfer agent to pull with");
      return;
    }
    deadline = timer.schedule(
        () -> fallBack("prefill and KV transfer took longer than " + timeout), timeout.toMillis(), TimeUnit.MILLISECONDS);
    loop.call(engine -> ((KvHandoff) engine).beginImport(request))
        .whenComplete(
            (p, error) -> {
              synchronized (this) {
                if (error != null || p == null) {
                  if (p == null && error == null) {
                    fallBackLocked("no KV room for an import now");
                  } else {
                    fallBackLocked("refused import: " + error.getMessage());
                  }
                  return;
                }
                pending = p;
                if (settled) { // cancelled or timed out meanwhile
                  releaseAfterReads(null);
                  return;
                }
                WorkerGrpc.newStub(owner.channel(remote.getWorkerAddress())).prefill(this);
                // The call keeps its remote_prefill: it names the backend the prefill worker's layout must be for.
                call.onNext(PrefillMessage.newBuilder().setCall(wire.toBuilder().setRemotePrefill(
                    remote.toBuilder().setKvTransferBackend(via == null ? "" : via.backend()))).build());
              }
            });
  }

  @Override
  public void beforeStart(ClientCallStreamObserver<PrefillMessage> requestStream) {
    this.call = requestStream;
  }

  @Override
  public synchronized void onNext(PrefillEvent event) {
    if (settled) {
      return;
    }
    switch (event.getKindCase()) {
      case LAYOUT -> {
        KvLayout l = event.getLayout();
        String problem = checkLayout(l);
        if (problem != null) {
          fallBackLocked(problem);
          return;
        }
        layout = l;
      }
      case LAYER_READY -> pullLayer(event.getLayerReady().getLayer());
      case DONE -> {
        done = event.getDone();
        doneNanos = System.nanoTime();
        finishIfComplete();
      }
      default -> fallBackLocked("unknown prefill event");
    }
  }

  private static String rotation(String keyRotation) {
    return switch (keyRotation) {
      case ModelConfig.RopeScaling.LONG_FACTORS -> "LongRoPE's long factors";
      case ModelConfig.RopeScaling.SHORT_FACTORS -> "LongRoPE's short factors";
      case "" -> "the model's one rotation";
      default -> keyRotation;
    };
  }

  private String checkLayout(KvLayout l) {
    KvHandoff h = transfer.handoff();
    if (!l.getKvCacheDtype().equals(h.kvCacheDtype())) {
      return "prefill worker stores KV in " + (l.getKvCacheDtype().isEmpty() ? "an unnamed dtype" : l.getKvCacheDtype())
          + ", this worker in " + h.kvCacheDtype() + " (start both with the same --kv-cache-dtype)";
    }
    if (!l.getKeyRotation().equals(h.keyRotation())) {
      return "prefill worker rotated keys with " + rotation(l.getKeyRotation()) + ", this worker with " + rotation(h.keyRotation())
          + " (LongRoPE's factor set follows --max-context-length: start both on the same side of the model's original context)";
    }
    if (l.getBlockBytes() != h.blockBytes() || l.getLayerKeysCount() != h.layers() || l.getLayerValuesCount() != h.layers()) {
      return "prefill worker's KV layout (" + l.getLayerKeysCount() + " layers, " + l.getBlockBytes()
          + " bytes a block) differs from this worker's (" + h.layers() + ", " + h.blockBytes() + ")";
    }
    if (!l.getTransferBackend().equals(via.backend())) {
      return "prefill worker's KV layout is for transfer backend " + l.getTransferBackend() + ", this pull reads with " + via.backend();
    }
    if (l.getBlocksCount() != pending.blocks().length) {
      return "prefill worker holds " + l.getBlocksCount() + " blocks for the prompt, this worker allocated " + pending.blocks().length;
    }
    return null;
  }

  private void pullLayer(int layer) {
    if (layout == null || layer != layersStarted) {
      fallBackLocked("prefill worker announced layer " + layer + " out of order");
      return;
    }
    if (layersStarted == 0) {
      firstLayerNanos = System.nanoTime();
    }
    layersStarted++;
    KvHandoff h = transfer.handoff();
    long bb = h.blockBytes();
    MemoryDescriptor keys = WorkerKvTransfer.fromProto(layout.getLayerKeys(layer));
    MemoryDescriptor values = WorkerKvTransfer.fromProto(layout.getLayerValues(layer));
    List<MemoryDescriptor> from = new ArrayList<>();
    List<MemorySegment> into = new ArrayList<>();
    int[] remoteBlocks = layout.getBlocksList().stream().mapToInt(Integer::intValue).toArray();
    // A device agent (cuda-ipc) copies into the engine's GPU copy of the cache; the commit brings the host cache along.
    MemorySegment intoKeys = onDevice() ? h.deviceKv().orElseThrow().keys().get(layer) : h.keys(layer);
    MemorySegment intoValues = onDevice() ? h.deviceKv().orElseThrow().values().get(layer) : h.values(layer);
    for (BlockRuns.Run run : BlockRuns.of(remoteBlocks, pending.blocks(), pending.cachedBlocks())) {
      long length = run.length() * bb;
      from.add(keys.slice(run.from() * bb, length));
      into.add(intoKeys.asSlice(run.to() * bb, length));
      from.add(values.slice(run.from() * bb, length));
      into.add(intoValues.asSlice(run.to() * bb, length));
      bytes += 2 * length;
    }
    Duration left = timeout.minusNanos(System.nanoTime() - startNanos);
    if (from.isEmpty()) {
      reads.add(CompletableFuture.completedFuture(null));
    } else if (left.isNegative() || left.isZero()) {
      fallBackLocked("no time left to pull layer " + layer);
      return;
    } else {
      reads.add(via.agent().read(from, into, left, null));
    }
    finishIfComplete();
  }

  private void finishIfComplete() {
    if (done == null || settled) {
      return;
    }
    if (layersStarted != transfer.handoff().layers()) {
      if (done != null && layout == null && layersStarted == 0) {
        fallBackLocked("prefill worker finished without announcing its KV");
      }
      return;
    }
    // Async: the last read completes on its agent's I/O thread, and this takes the pull's lock.
    CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
        .whenCompleteAsync((v, error) -> {
          synchronized (this) {
            if (settled) {
              return;
            }
            if (error != null) {
              fallBackLocked("KV pull from " + remote.getWorkerId() + " failed: " + rootMessage(error));
            } else {
              commit();
            }
          }
        });
  }

  /** Every byte is here: release the prefill worker's blocks and decode. */
  private void commit() {
    settled = true;
    owner.ended(request.requestId(), this);
    deadline.cancel(false);
    long now = System.nanoTime();
    long transferMicros = (now - firstLayerNanos) / 1_000;
    long exposedMicros = (now - doneNanos) / 1_000;
    transfer.recordPull(bytes, now - firstLayerNanos);
    try {
      call.onNext(PrefillMessage.newBuilder().setRelease(PrefillRelease.getDefaultInstance()).build());
      call.onCompleted();
    } catch (RuntimeException e) {
      log.debug("prefill stream of {} closed before the release", request.requestId(), e);
    }
    int first = done.getFirstToken();
    TokenLogprob[] logprobs =
        done.hasLogprob() ? new TokenLogprob[] {FromWire.logprob(done.getLogprob())} : null;
    boolean stops = request.stop().endsAt(first, 1, owner.eosTokenIds());
    RequestOutput firstOutput =
        new RequestOutput(
            request.requestId(),
            new int[] {first},
            stops ? FinishReason.STOP : null,
            done.getPromptTokens(),
            done.getCachedTokens(),
            logprobs);
    KvHandoff.PendingImport p = pending;
    loop.call(engine -> {
      KvHandoff handoff = (KvHandoff) engine;
      sink.outcome(new PrefillOutcome(remote.getWorkerId(), "", transferMicros, bytes, exposedMicros));
      if (stops) {
        handoff.abortImport(p);
      } else {
        if (onDevice()) {
          handoff.commitDeviceImport(p, first);
        } else {
          handoff.commitImport(p, first);
        }
        loop.attach(request.requestId(), sink);
      }
      sink.onOutput(firstOutput);
      return null;
    }).exceptionally(error -> {
      sink.onFailure(new IllegalStateException("worker stopped: " + error.getMessage()));
      return null;
    });
  }

  /** Whether this pull reads into the engine's GPU copy of the cache (a device agent's reads land in device memory). */
  private boolean onDevice() {
    return via.agent().deviceMemory();
  }

  synchronized boolean cancel() {
    if (settled) {
      return false;
    }
    settled = true;
    owner.ended(request.requestId(), this);
    if (deadline != null) {
      deadline.cancel(false);
    }
    cancelCall("client went away");
    releaseAfterReads(null);
    sink.onOutput(new RequestOutput(request.requestId(), new int[0], FinishReason.CANCELLED, 0, 0));
    return true;
  }

  void fallBack(String reason) {
    synchronized (this) {
      fallBackLocked(reason);
    }
  }

  /** Gives up on the remote prefill: frees what was allocated, then prefills here. */
  private void fallBackLocked(String reason) {
    if (settled) {
      return;
    }
    settled = true;
    owner.ended(request.requestId(), this);
    if (deadline != null) {
      deadline.cancel(false);
    }
    owner.fellBack();
    log.warn("request {}: remote prefill on {} failed ({}); prefilling here", request.requestId(), remote.getWorkerId(), reason);
    cancelCall(reason);
    releaseAfterReads(() -> {
      sink.outcome(new PrefillOutcome("", reason, 0, 0, 0));
      loop.submit(request, sink);
    });
  }

  private void cancelCall(String reason) {
    if (call != null) {
      try {
        call.cancel(reason, null);
      } catch (RuntimeException e) {
        log.debug("cancel of prefill stream failed", e);
      }
    }
  }

  /**
   * Frees the import's blocks once no read can still write into them (every read ends: the
   * agent bounds each by its timeout), then runs {@code then} on the engine loop.
   */
  private void releaseAfterReads(Runnable then) {
    KvHandoff.PendingImport p = pending;
    CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
        .handle((v, e) -> null)
        .thenRunAsync(() -> {
          try {
            loop.call(engine -> {
              if (p != null) {
                ((KvHandoff) engine).abortImport(p);
              }
              if (then != null) {
                then.run();
              }
              return null;
            });
          } catch (IllegalStateException e) {
            sink.onFailure(e); // the worker is shutting down
          }
        });
  }

  @Override
  public void onError(Throwable t) {
    fallBack("prefill worker " + remote.getWorkerId() + " failed: " + rootMessage(t));
  }

  @Override
  public synchronized void onCompleted() {
    if (!settled && done == null) {
      fallBackLocked("prefill worker ended the call without a first token");
    }
  }

  private static String rootMessage(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null && c.getCause() != c) {
      c = c.getCause();
    }
    return c.getClass().getSimpleName() + ": " + c.getMessage();
  }
}
