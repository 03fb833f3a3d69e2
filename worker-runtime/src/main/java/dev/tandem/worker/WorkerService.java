package dev.tandem.worker;

import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.KvEvent;
import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerRole;
import dev.tandem.engine.EngineRequest;
import dev.tandem.proto.worker.v1.CancelRequest;
import dev.tandem.proto.worker.v1.CancelResponse;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.HealthRequest;
import dev.tandem.proto.worker.v1.HealthResponse;
import dev.tandem.proto.worker.v1.KvEventBatch;
import dev.tandem.proto.worker.v1.KvEventsRequest;
import dev.tandem.proto.worker.v1.LinkFigures;
import dev.tandem.proto.worker.v1.LoadLoraAdapterRequest;
import dev.tandem.proto.worker.v1.LoraAdapters;
import dev.tandem.proto.worker.v1.UnloadLoraAdapterRequest;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.LoadRequest;
import dev.tandem.proto.worker.v1.ModelCard;
import dev.tandem.proto.worker.v1.ModelCardRequest;
import dev.tandem.proto.worker.v1.PrefillEvent;
import dev.tandem.proto.worker.v1.PrefillMessage;
import dev.tandem.proto.worker.v1.ProbeLinkRequest;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import dev.tandem.wire.FromWire;
import dev.tandem.wire.ToWire;
import dev.tandem.worker.role.PrefillOutcome;
import dev.tandem.worker.role.RoleParts;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker API over one {@link EngineLoop}: generation streams, cancellation (explicit, or when
 * the caller goes away), KV event subscriptions with replay, load reports and health; the {@code
 * Prefill} call and link probes when the worker's role module added them ({@link RoleParts}).
 * Messages are mapped to records by {@code dev.tandem.wire} as they arrive, and back as they leave.
 *
 * <p>Threading: gRPC calls arrive on gRPC's executor; everything that touches the engine is
 * marshalled onto the engine loop.
 */
public final class WorkerService extends WorkerGrpc.WorkerImplBase {
  private static final Logger log = LoggerFactory.getLogger(WorkerService.class);

  private final WorkerId workerId;
  private final WorkerRole role;
  private final EngineLoop loop;
  private final KvEventLog events;
  private final WorkerFacts facts;
  private final ScheduledExecutorService timer;
  private final boolean publishKvEvents;
  private final RoleParts parts;
  private final CallGate gate;
  private final boolean loraUpdates;

  WorkerService(
      WorkerId workerId,
      WorkerRole role,
      EngineLoop loop,
      KvEventLog events,
      WorkerFacts facts,
      ScheduledExecutorService timer,
      boolean publishKvEvents,
      RoleParts parts,
      CallGate gate,
      boolean loraUpdates) {
    this.workerId = workerId;
    this.role = role;
    this.loop = loop;
    this.events = events;
    this.facts = facts;
    this.timer = timer;
    this.publishKvEvents = publishKvEvents;
    this.parts = parts;
    this.gate = gate;
    this.loraUpdates = loraUpdates;
  }

  @Override
  public void describe(DescribeRequest request, StreamObserver<WorkerRegistration> response) {
    response.onNext(ToWire.registration(facts.description()));
    response.onCompleted();
  }

  @Override
  public void getModelCard(ModelCardRequest request, StreamObserver<ModelCard> response) {
    response.onNext(ToWire.modelCard(facts.modelCard()));
    response.onCompleted();
  }

  @Override
  public void generate(GenerateRequest wire, StreamObserver<GenerateChunk> response) {
    long receivedNanos = System.nanoTime();
    var call = (ServerCallStreamObserver<GenerateChunk>) response;
    GenerationRequest request;
    EngineRequest engineRequest;
    try {
      request = FromWire.request(wire, UUID.randomUUID().toString());
      engineRequest = EngineRequest.of(request);
    } catch (IllegalArgumentException e) {
      response.onError(ToWire.status(GenerationException.Kind.INVALID_REQUEST, e.getMessage()));
      return;
    }
    String id = request.requestId();
    GenerateStream stream = new GenerateStream(id, workerId, call, receivedNanos);
    call.setOnCancelHandler(
        () -> {
          if (!stream.done() && !(parts.remote() != null && parts.remote().cancel(id))) {
            loop.abort(id);
          }
        });
    if (wire.hasRemotePrefill()) {
      if (parts.remote() != null) {
        parts.remote().start(engineRequest, wire, wire.getRemotePrefill(), stream);
        return;
      }
      stream.outcome(PrefillOutcome.fallback("this worker has no KV transfer agent"));
    }
    loop.submit(engineRequest, stream);
  }

  @Override
  public StreamObserver<PrefillMessage> prefill(StreamObserver<PrefillEvent> response) {
    if (parts.prefill() == null) {
      response.onError(
          Status.UNIMPLEMENTED
              .withDescription("worker " + workerId + " (" + role + ") does not serve remote prefill; start one with --role prefill")
              .asRuntimeException());
      return new StreamObserver<>() {
        @Override public void onNext(PrefillMessage m) {}
        @Override public void onError(Throwable t) {}
        @Override public void onCompleted() {}
      };
    }
    return parts.prefill().open(response);
  }

  @Override
  public void probeLink(ProbeLinkRequest request, StreamObserver<LinkFigures> response) {
    if (parts.remote() == null) {
      response.onError(
          Status.FAILED_PRECONDITION
              .withDescription("worker " + workerId + " has no KV transfer agent to probe with")
              .asRuntimeException());
      return;
    }
    // Probing takes a while: off the transport thread.
    Thread.ofVirtual().start(() -> {
      try {
        response.onNext(parts.remote().probe(request.getPeerAddress(), request.getBackend()));
        response.onCompleted();
      } catch (Exception e) {
        String what = "link probe of " + request.getPeerAddress() + (request.getBackend().isEmpty() ? "" : " over " + request.getBackend());
        if (e instanceof IllegalArgumentException) {
          response.onError(Status.FAILED_PRECONDITION.withDescription(what + " failed: " + e.getMessage()).asRuntimeException());
          return;
        }
        // The caller learns only that the peer is not a reachable worker of this deployment, not
        // why (refused, silent, not TLS, not a worker): the probe is no port scanner. The reason
        // is in this worker's log.
        log.info("{} failed", what, e);
        response.onError(Status.UNAVAILABLE.withDescription(what + " failed: it did not answer as a worker of this deployment with a transfer agent (reason in worker "
            + workerId + "'s log)").asRuntimeException());
      }
    });
  }

  @Override
  public void cancel(CancelRequest request, StreamObserver<CancelResponse> response) {
    if (parts.remote() != null && parts.remote().cancel(request.getRequestId())) {
      response.onNext(CancelResponse.newBuilder().setFound(true).build());
      response.onCompleted();
      return;
    }
    loop.abort(request.getRequestId())
        .whenComplete(
            (found, error) -> {
              if (error != null) {
                response.onError(Status.UNAVAILABLE.withCause(error).asRuntimeException());
              } else {
                response.onNext(CancelResponse.newBuilder().setFound(found).build());
                response.onCompleted();
              }
            });
  }

  @Override
  public void subscribeKvEvents(KvEventsRequest request, StreamObserver<KvEventBatch> response) {
    var call = (ServerCallStreamObserver<KvEventBatch>) response;
    if (!publishKvEvents) {
      return; // events disabled: the stream stays open and silent
    }
    KvEventLog.Subscriber subscriber =
        (batch, snapshot) -> {
          if (call.isCancelled()) {
            return false;
          }
          try {
            call.onNext(eventBatch(batch, snapshot));
            return true;
          } catch (RuntimeException e) {
            return false;
          }
        };
    loop.call(
            engine -> {
              List<KvEvent> snapshot = engine.cacheSnapshot();
              events.subscribe(request.getAfterEventId(), snapshot, subscriber);
              return null;
            })
        .exceptionally(
            error -> {
              call.onError(Status.UNAVAILABLE.withCause(error).asRuntimeException());
              return null;
            });
  }

  @Override
  public void getLoad(LoadRequest request, StreamObserver<LoadReport> response) {
    response.onNext(ToWire.load(facts.load()));
    response.onCompleted();
  }

  /**
   * Reports every {@code interval_ms} (1 s if unset, at least 10 ms), and besides as soon as the
   * requests running or waiting or the prompt tokens queued change, no sooner than a tenth of the
   * interval (10 to 50 ms) after the report before: a router that reads a report taken while a
   * prompt it knows has finished was still prefilling predicts the next prompt there that much too
   * slow. Under steady load (a change every step) that is 20 reports a second at most.
   */
  @Override
  public void watchLoad(WatchLoadRequest request, StreamObserver<LoadReport> response) {
    var call = (ServerCallStreamObserver<LoadReport>) response;
    long interval = Math.max(10, request.getIntervalMs() == 0 ? 1000 : request.getIntervalMs());
    LoadStream stream = new LoadStream(call, TimeUnit.MILLISECONDS.toNanos(Math.clamp(interval / 10, 10, 50)));
    ScheduledFuture<?> task = timer.scheduleAtFixedRate(stream::send, 0, interval, TimeUnit.MILLISECONDS);
    Runnable watcher = stream::changed;
    loop.addLoadWatcher(watcher);
    call.setOnCancelHandler(() -> {
      loop.removeLoadWatcher(watcher);
      task.cancel(false);
    });
  }

  /** One router's load stream: its ticks and the changes that bring a report forward. */
  private final class LoadStream {
    private final ServerCallStreamObserver<LoadReport> call;
    private final long gapNanos;
    private final java.util.concurrent.atomic.AtomicBoolean changePending = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile long lastSentNanos;

    LoadStream(ServerCallStreamObserver<LoadReport> call, long gapNanos) {
      this.call = call;
      this.gapNanos = gapNanos;
    }

    /** On the engine loop: schedules one report, no sooner than the gap after the last. */
    void changed() {
      if (changePending.compareAndSet(false, true)) {
        long wait = Math.max(0, lastSentNanos + gapNanos - System.nanoTime());
        timer.schedule(() -> {
          changePending.set(false);
          send();
        }, wait, TimeUnit.NANOSECONDS);
      }
    }

    /** The tick's or the change's report (one at a time: the timer may run them on different threads). */
    synchronized void send() {
      if (call.isCancelled()) {
        return;
      }
      try {
        call.onNext(ToWire.load(facts.load()));
        lastSentNanos = System.nanoTime();
      } catch (RuntimeException e) {
        log.debug("load watcher went away", e);
      }
    }
  }

  /**
   * Reads the adapter on a thread of its own (this call arrives on the transport's thread), while
   * the engine keeps stepping; answers with the adapters requests may name now.
   */
  @Override
  public void loadLoraAdapter(LoadLoraAdapterRequest request, StreamObserver<LoraAdapters> response) {
    if (refuseLoraUpdates(response)) {
      return;
    }
    String name = request.getLoraName();
    String path = request.getLoraPath();
    Thread.ofVirtual().name("lora-load-" + name).start(() -> {
      try {
        if (path.isBlank()) {
          throw new IllegalArgumentException("lora_path is empty: give the adapter's directory on worker " + workerId + "'s file system");
        }
        loop.engine().loadLoraAdapter(name, java.nio.file.Path.of(path));
      } catch (UnsupportedOperationException e) {
        response.onError(Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException());
        return;
      } catch (RuntimeException e) {
        response.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
        return;
      }
      answerAdapters(response);
    });
  }

  /** Takes the adapter off on the engine loop; the requests running with it finish with it. */
  @Override
  public void unloadLoraAdapter(UnloadLoraAdapterRequest request, StreamObserver<LoraAdapters> response) {
    if (refuseLoraUpdates(response)) {
      return;
    }
    loop.call(engine -> engine.unloadLoraAdapter(request.getLoraName()))
        .whenComplete((running, error) -> {
          Throwable cause = error instanceof java.util.concurrent.CompletionException c && c.getCause() != null ? c.getCause() : error;
          if (cause instanceof IllegalArgumentException) {
            response.onError(Status.NOT_FOUND.withDescription(cause.getMessage()).asRuntimeException());
          } else if (cause != null) {
            response.onError(Status.UNAVAILABLE.withCause(cause).asRuntimeException());
          } else {
            answerAdapters(response);
          }
        });
  }

  /** Answers a LoRA change with the adapters requests may name now, and has every load stream report it at once. */
  private void answerAdapters(StreamObserver<LoraAdapters> response) {
    response.onNext(LoraAdapters.newBuilder().addAllNames(loop.engine().loraAdapters()).build());
    response.onCompleted();
    loop.reportNow();
  }

  /** Answers FAILED_PRECONDITION, and true, where this worker was started without runtime LoRA updates. */
  private boolean refuseLoraUpdates(StreamObserver<LoraAdapters> response) {
    if (loraUpdates) {
      return false;
    }
    response.onError(Status.FAILED_PRECONDITION
        .withDescription("worker " + workerId + " takes no LoRA adapter loads or unloads: start it with --allow-runtime-lora-updating")
        .asRuntimeException());
    return true;
  }

  @Override
  public void health(HealthRequest request, StreamObserver<HealthResponse> response) {
    boolean running = loop.isRunning();
    boolean serving = running && !gate.draining();
    response.onNext(
        HealthResponse.newBuilder()
            .setServing(serving)
            .setMessage(!running ? "engine loop stopped" : serving ? "serving" : gate.refusal())
            .build());
    response.onCompleted();
  }

  private KvEventBatch eventBatch(List<KvEvent> batch, boolean snapshot) {
    var b = KvEventBatch.newBuilder().setWorkerId(workerId.value()).setSnapshot(snapshot);
    for (KvEvent e : batch) {
      b.addEvents(ToWire.kvEvent(e));
    }
    return b.build();
  }
}
