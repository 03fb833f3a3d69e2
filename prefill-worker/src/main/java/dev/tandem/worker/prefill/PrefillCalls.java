package dev.tandem.worker.prefill;

import dev.tandem.common.FinishReason;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvHandoff;
import dev.tandem.engine.RequestOutput;
import dev.tandem.common.StopConditions;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.KvLayout;
import dev.tandem.proto.worker.v1.LayerReady;
import dev.tandem.proto.worker.v1.PrefillDone;
import dev.tandem.proto.worker.v1.PrefillEvent;
import dev.tandem.proto.worker.v1.PrefillMessage;
import dev.tandem.worker.EngineLoop;
import dev.tandem.worker.WorkerKvTransfer;
import dev.tandem.worker.role.PrefillEndpoint;
import dev.tandem.wire.FromWire;
import dev.tandem.wire.ToWire;
import dev.tandem.common.FinishReason;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The prefill side of disaggregated serving ({@code Prefill} RPC): computes a prompt with
 * max_tokens 1, sends the layout of the blocks holding its KV and each layer as it completes, then
 * the first token, and holds the blocks until the caller releases them, goes away, or the hold
 * times out. Whatever ends the call, the blocks go back to the pool.
 *
 * <p>Threading: gRPC callbacks on gRPC's threads; the layer listener and request outputs on the
 * engine loop. Each call's state is guarded by its own monitor.
 */
public final class PrefillCalls implements PrefillEndpoint {
  private static final Logger log = LoggerFactory.getLogger(PrefillCalls.class);

  private final EngineLoop loop;
  private final WorkerKvTransfer transfer;
  private final ScheduledExecutorService timer;
  private final Map<String, Call> calls = new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicLong abandoned = new java.util.concurrent.atomic.AtomicLong();

  public PrefillCalls(
      EngineLoop loop,
      WorkerKvTransfer transfer,
      ScheduledExecutorService timer) {
    this.loop = loop;
    this.transfer = transfer;
    this.timer = timer;
    loop.call(engine -> {
          ((KvHandoff) engine).setPromptLayerListener(this::layerDone);
          return null;
        })
        .join();
  }

  @Override
  public StreamObserver<PrefillMessage> open(StreamObserver<PrefillEvent> response) {
    return new Call((ServerCallStreamObserver<PrefillEvent>) response);
  }

  @Override
  public long abandoned() {
    return abandoned.get();
  }

  @Override
  public int inProgress() {
    return calls.size();
  }

  private void layerDone(int layer, List<String> requestIds, List<int[]> blocks) {
    for (int i = 0; i < requestIds.size(); i++) {
      Call call = calls.get(requestIds.get(i));
      if (call != null) {
        call.layerDone(layer, blocks.get(i));
      }
    }
  }

  private final class Call implements StreamObserver<PrefillMessage> {
    private final ServerCallStreamObserver<PrefillEvent> response;
    private final AtomicBoolean ended = new AtomicBoolean();
    private volatile String id;
    private long receivedNanos;
    private boolean layoutSent;
    private WorkerKvTransfer.Endpoint via; // the agent the caller reads with
    private ScheduledFuture<?> holdTimeout;

    Call(ServerCallStreamObserver<PrefillEvent> response) {
      this.response = response;
      response.setOnCancelHandler(() -> {
        if (!ended.get()) {
          abandoned.incrementAndGet();
        }
        end(null, "caller went away");
      });
    }

    @Override
    public void onNext(PrefillMessage message) {
      switch (message.getKindCase()) {
        case CALL -> start(message.getCall());
        case RELEASE -> end(null, null);
        default -> end(Status.INVALID_ARGUMENT.withDescription("empty prefill message"), "bad message");
      }
    }

    private void start(GenerateRequest wire) {
      if (id != null) {
        end(Status.INVALID_ARGUMENT.withDescription("a prefill call carries one request"), "second request");
        return;
      }
      receivedNanos = System.nanoTime();
      EngineRequest full;
      try {
        full = EngineRequest.of(FromWire.request(wire, UUID.randomUUID().toString()));
      } catch (IllegalArgumentException e) {
        end(Status.INVALID_ARGUMENT.withDescription(e.getMessage()), "bad request");
        return;
      }
      try {
        // The decode worker names the backend it reads with; the layout describes the memory as that agent serves it.
        via = transfer.endpoint(wire.hasRemotePrefill() ? wire.getRemotePrefill().getKvTransferBackend() : "");
      } catch (IllegalArgumentException e) {
        end(Status.FAILED_PRECONDITION.withDescription(e.getMessage()), "no such transfer backend");
        return;
      }
      String requestId = full.requestId();
      // The output's first token is drawn here: under min_tokens it may not end the output either.
      StopConditions first = full.stop().minTokens() > 0
          ? new StopConditions(1, full.stop().stopTokenIds(), full.stop().ignoreEos(), 1)
          : new StopConditions(1, full.stop().stopTokenIds(), true);
      EngineRequest one = full.withStop(first); // every other field kept: the cache salt's hashes are the ones the decode worker and the router expect
      if (calls.putIfAbsent(requestId, this) != null) {
        end(Status.ALREADY_EXISTS.withDescription("request " + requestId + " is already being prefilled here"), "duplicate");
        return;
      }
      id = requestId;
      holdTimeout =
          timer.schedule(
              () -> end(Status.DEADLINE_EXCEEDED.withDescription(
                  "prefill of " + requestId + " not released within " + transfer.timeout()), "hold timeout"),
              transfer.timeout().toMillis(),
              TimeUnit.MILLISECONDS);
      loop.submit(
          one,
          new EngineLoop.Listener() {
            @Override
            public void onOutput(RequestOutput output) {
              if (output.finished() && output.finishReason() != FinishReason.CANCELLED) {
                done(output);
              }
            }

            @Override
            public void onFailure(RuntimeException error) {
              Status status = error instanceof IllegalArgumentException ? Status.INVALID_ARGUMENT : Status.UNAVAILABLE;
              end(status.withDescription(error.getMessage()), "engine refused or failed");
            }
          },
          engine -> ((KvHandoff) engine).holdKvOnFinish(requestId));
    }

    /** On the engine loop, while the last prefill step runs. */
    synchronized void layerDone(int layer, int[] blocks) {
      if (ended.get()) {
        return;
      }
      if (!layoutSent) {
        layoutSent = true;
        var layout = KvLayout.newBuilder().setBlockBytes(transfer.handoff().blockBytes())
            .setKvCacheDtype(transfer.handoff().kvCacheDtype())
            .setKeyRotation(transfer.handoff().keyRotation())
            .setTransferBackend(via.backend());
        for (int l = 0; l < transfer.handoff().layers(); l++) {
          layout.addLayerKeys(WorkerKvTransfer.toProto(via.keys(l)));
          layout.addLayerValues(WorkerKvTransfer.toProto(via.values(l)));
        }
        for (int b : blocks) {
          layout.addBlocks(b);
        }
        send(PrefillEvent.newBuilder().setLayout(layout).build());
      }
      send(PrefillEvent.newBuilder().setLayerReady(LayerReady.newBuilder().setLayer(layer)).build());
    }

    private synchronized void done(RequestOutput output) {
      if (ended.get()) {
        return;
      }
      var done =
          PrefillDone.newBuilder()
              .setFirstToken(output.newTokens()[0])
              .setPromptTokens(output.promptTokens())
              .setCachedTokens(output.cachedTokens())
              .setPrefillUs((System.nanoTime() - receivedNanos) / 1_000);
      if (output.logprobs() != null && output.logprobs().length > 0) {
        done.setLogprob(ToWire.logprob(output.logprobs()[0]));
      }
      send(PrefillEvent.newBuilder().setDone(done).build());
    }

    private void send(PrefillEvent event) {
      try {
        response.onNext(event);
      } catch (RuntimeException e) {
        log.debug("prefill stream {} closed while sending", id, e);
      }
    }

    /** Ends the call once: frees the blocks (held or still computing) and closes the stream. */
    private void end(Status error, String why) {
      if (!ended.compareAndSet(false, true)) {
        return;
      }
      String requestId = id;
      if (holdTimeout != null) {
        holdTimeout.cancel(false);
      }
      if (requestId != null) {
        calls.remove(requestId, this);
        try {
          loop.abort(requestId); // frees held blocks, or stops the prefill
        } catch (IllegalStateException e) {
          log.debug("engine loop stopped before prefill {} was freed", requestId);
        }
        if (why != null) {
          log.debug("prefill {} ended: {}", requestId, why);
        }
      }
      synchronized (this) {
        try {
          if (error == null) {
            response.onCompleted();
          } else {
            response.onError(error.asRuntimeException());
          }
        } catch (RuntimeException e) {
          log.debug("prefill stream {} already closed", requestId, e);
        }
      }
    }

    @Override
    public void onError(Throwable t) {
      if (!ended.get()) {
        abandoned.incrementAndGet();
      }
      end(null, "caller failed: " + t);
    }

    @Override
    public void onCompleted() {
      end(null, null);
    }
  }
}
