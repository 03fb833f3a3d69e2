package dev.tandem.worker;

import com.google.protobuf.ByteString;
import dev.tandem.common.KvEvent;
import dev.tandem.common.WorkerId;
import dev.tandem.common.wire.KvEventWire;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.SamplingParams;
import dev.tandem.engine.StopConditions;
import dev.tandem.proto.worker.v1.CancelRequest;
import dev.tandem.proto.worker.v1.CancelResponse;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.FinishReason;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.HealthRequest;
import dev.tandem.proto.worker.v1.HealthResponse;
import dev.tandem.proto.worker.v1.KvEventBatch;
import dev.tandem.proto.worker.v1.KvEventsRequest;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.LoadRequest;
import dev.tandem.proto.worker.v1.ModelCard;
import dev.tandem.proto.worker.v1.ModelCardRequest;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import dev.tandem.proto.worker.v1.WorkerRole;
import dev.tandem.proto.worker.v1.LinkFigures;
import dev.tandem.proto.worker.v1.PrefillEvent;
import dev.tandem.proto.worker.v1.PrefillMessage;
import dev.tandem.proto.worker.v1.ProbeLinkRequest;
import dev.tandem.worker.disagg.PrefillCalls;
import dev.tandem.worker.disagg.RemotePrefills;
import dev.tandem.worker.disagg.WorkerKvTransfer;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker API over one {@link EngineLoop}: generation streams, cancellation (explicit, or when
 * the caller goes away), KV event subscriptions with replay, load reports and health.
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
  private final ModelFiles modelFiles;
  private final ScheduledExecutorService timer;
  private final boolean publishKvEvents;
  private final Disaggregation disagg;
  private final String host = HostCpus.hostName();
  private final String cpus = HostCpus.allowedCpus(); // the starting thread's, which the engine's threads inherit

  /**
   * A worker's disaggregation parts: its transfer agent over the engine's KV memory, the prefill
   * side (prefill workers) and the pull side (decode and aggregated workers); null parts are off.
   */
  public record Disaggregation(WorkerKvTransfer transfer, PrefillCalls prefill, RemotePrefills pull) {}

  public WorkerService(
      WorkerId workerId,
      WorkerRole role,
      EngineLoop loop,
      KvEventLog events,
      ModelFiles modelFiles,
      ScheduledExecutorService timer,
      boolean publishKvEvents,
      Disaggregation disagg) {
    this.workerId = workerId;
    this.role = role;
    this.loop = loop;
    this.events = events;
    this.modelFiles = modelFiles;
    this.timer = timer;
    this.publishKvEvents = publishKvEvents;
    this.disagg = disagg == null ? new Disaggregation(null, null, null) : disagg;
  }

  @Override
  public void describe(DescribeRequest request, StreamObserver<WorkerRegistration> response) {
    EngineInfo info = loop.engine().info();
    var b =
        WorkerRegistration.newBuilder()
            .setWorkerId(workerId.value())
            .setRole(role)
            .setBlockSize(info.blockSize())
            .setModelName(info.modelName())
            .setMaxContextLength(info.maxContextLength())
            .setVocabSize(info.vocabSize())
            .setKvBytesPerToken(info.kvBytesPerToken())
            .setTotalKvBlocks(info.totalKvBlocks())
            .setEngine(info.engineName());
    info.features().forEach(f -> b.addSupportedFeatures(f.wireName()));
    for (int eos : info.eosTokenIds()) {
      b.addEosTokenIds(eos);
    }
    b.setHost(host).setCpus(cpus);
    if (disagg.transfer() != null) {
      b.setKvTransferBackend(disagg.transfer().agent().backend())
          .setKvTransferAddress(disagg.transfer().agent().address())
          .setProbeRegion(WorkerKvTransfer.toProto(disagg.transfer().probe()))
          .setNumLayers(disagg.transfer().handoff().layers());
    }
    response.onNext(b.build());
    response.onCompleted();
  }

  @Override
  public void getModelCard(ModelCardRequest request, StreamObserver<ModelCard> response) {
    EngineInfo info = loop.engine().info();
    var b =
        ModelCard.newBuilder()
            .setModelName(info.modelName())
            .setTokenizerJson(ByteString.copyFrom(modelFiles.tokenizerJson()))
            .setTokenizerConfigJson(ByteString.copyFrom(modelFiles.tokenizerConfigJson()))
            .setMaxContextLength(info.maxContextLength());
    for (int eos : info.eosTokenIds()) {
      b.addEosTokenIds(eos);
    }
    response.onNext(b.build());
    response.onCompleted();
  }

  @Override
  public void generate(GenerateRequest request, StreamObserver<GenerateChunk> response) {
    long receivedNanos = System.nanoTime();
    var call = (ServerCallStreamObserver<GenerateChunk>) response;
    String id = request.getRequestId().isEmpty() ? UUID.randomUUID().toString() : request.getRequestId();
    EngineRequest engineRequest;
    try {
      engineRequest = toEngineRequest(id, request);
    } catch (IllegalArgumentException e) {
      response.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    ChunkListener listener = new ChunkListener(id, call, receivedNanos);
    call.setOnCancelHandler(
        () -> {
          if (!listener.done.get() && !(disagg.pull() != null && disagg.pull().cancel(id))) {
            loop.abort(id);
          }
        });
    if (request.hasRemotePrefill()) {
      if (disagg.pull() != null) {
        disagg.pull().start(engineRequest, request, request.getRemotePrefill(), listener);
        return;
      }
      listener.outcome(new RemotePrefills.Outcome("", "this worker has no KV transfer agent", 0, 0, 0));
    }
    loop.submit(engineRequest, listener);
  }

  /** Turns one request's outputs into chunks of its generate stream. */
  private final class ChunkListener implements RemotePrefills.Sink {
    final AtomicBoolean done = new AtomicBoolean();
    private final String id;
    private final ServerCallStreamObserver<GenerateChunk> call;
    private final long receivedNanos;
    private volatile RemotePrefills.Outcome outcome;
    private boolean first = true;

    ChunkListener(String id, ServerCallStreamObserver<GenerateChunk> call, long receivedNanos) {
      this.id = id;
      this.call = call;
      this.receivedNanos = receivedNanos;
    }

    @Override
    public void outcome(RemotePrefills.Outcome outcome) {
      this.outcome = outcome;
    }

    @Override
    public void onOutput(RequestOutput output) {
      if (call.isCancelled()) {
        return;
      }
      var chunk = GenerateChunk.newBuilder();
      for (int t : output.newTokens()) {
        chunk.addTokenIds(t);
      }
      if (output.logprobs() != null) {
        for (var lp : output.logprobs()) {
          chunk.addLogprobs(LogprobWire.toProto(lp));
        }
      }
      if (first) {
        first = false;
        chunk
            .setPromptTokens(output.promptTokens())
            .setCachedTokens(output.cachedTokens())
            .setWorkerId(workerId.value())
            .setWorkerTtftUs((System.nanoTime() - receivedNanos) / 1_000);
        RemotePrefills.Outcome o = outcome;
        if (o != null) {
          chunk
              .setPrefillWorkerId(o.prefillWorkerId())
              .setPrefillFallback(o.fallbackReason())
              .setKvTransferUs(o.transferMicros())
              .setKvTransferBytes(o.transferBytes())
              .setKvExposedUs(o.exposedMicros());
        }
      }
      if (output.finished()) {
        done.set(true);
        chunk.setFinishReason(toProto(output.finishReason()));
        if (output.promptTokens() > 0) {
          chunk.setPromptTokens(output.promptTokens()).setCachedTokens(output.cachedTokens());
        }
      }
      try {
        call.onNext(chunk.build());
        if (output.finished()) {
          call.onCompleted();
        }
      } catch (RuntimeException e) {
        log.debug("generate stream {} closed while sending", id, e);
      }
    }

    @Override
    public void onFailure(RuntimeException error) {
      done.set(true);
      Status status =
          error instanceof IllegalArgumentException ? Status.INVALID_ARGUMENT : Status.UNAVAILABLE;
      try {
        call.onError(status.withDescription(error.getMessage()).asRuntimeException());
      } catch (RuntimeException e) {
        log.debug("generate stream {} closed before its error", id, e);
      }
    }
  }

  @Override
  public StreamObserver<PrefillMessage> prefill(StreamObserver<PrefillEvent> response) {
    if (disagg.prefill() == null) {
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
    return disagg.prefill().open(response);
  }

  @Override
  public void probeLink(ProbeLinkRequest request, StreamObserver<LinkFigures> response) {
    if (disagg.pull() == null) {
      response.onError(
          Status.FAILED_PRECONDITION
              .withDescription("worker " + workerId + " has no KV transfer agent to probe with")
              .asRuntimeException());
      return;
    }
    // Probing takes a while: off the transport thread.
    Thread.ofVirtual().start(() -> {
      try {
        response.onNext(disagg.pull().probe(request.getPeerAddress()));
        response.onCompleted();
      } catch (Exception e) {
        response.onError(Status.UNAVAILABLE.withDescription("link probe of " + request.getPeerAddress() + " failed: " + e.getMessage()).asRuntimeException());
      }
    });
  }

  @Override
  public void cancel(CancelRequest request, StreamObserver<CancelResponse> response) {
    if (disagg.pull() != null && disagg.pull().cancel(request.getRequestId())) {
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
            call.onNext(toProto(batch, snapshot));
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
    response.onNext(loadReport());
    response.onCompleted();
  }

  @Override
  public void watchLoad(WatchLoadRequest request, StreamObserver<LoadReport> response) {
    var call = (ServerCallStreamObserver<LoadReport>) response;
    long interval = Math.max(10, request.getIntervalMs() == 0 ? 1000 : request.getIntervalMs());
    ScheduledFuture<?> task =
        timer.scheduleAtFixedRate(
            () -> {
              if (!call.isCancelled()) {
                try {
                  call.onNext(loadReport());
                } catch (RuntimeException e) {
                  log.debug("load watcher went away", e);
                }
              }
            },
            0,
            interval,
            TimeUnit.MILLISECONDS);
    call.setOnCancelHandler(() -> task.cancel(false));
  }

  @Override
  public void health(HealthRequest request, StreamObserver<HealthResponse> response) {
    boolean serving = loop.isRunning();
    response.onNext(
        HealthResponse.newBuilder()
            .setServing(serving)
            .setMessage(serving ? "serving" : "engine loop stopped")
            .build());
    response.onCompleted();
  }

  private LoadReport loadReport() {
    EngineLoad load = loop.load();
    return LoadReport.newBuilder()
        .setWorkerId(workerId.value())
        .setActiveRequests(load.runningRequests())
        .setWaitingRequests(load.waitingRequests())
        .setQueuedPrefillTokens(load.queuedPrefillTokens())
        .setKvBlocksUsed(load.kvBlocksUsed())
        .setKvBlocksTotal(load.kvBlocksTotal())
        .setLastEventId(load.lastEventId())
        .setPrefillTokensPerS(loop.prefillCost().tokensPerSecond(512))
        .setPrefillSPerToken(loop.prefillCost().perToken())
        .setPrefillSPerContextToken(loop.prefillCost().perContextToken())
        .setRemotePrefillFallbacks(disagg.pull() == null ? 0 : disagg.pull().fallbacks())
        .build();
  }

  private KvEventBatch toProto(List<KvEvent> batch, boolean snapshot) {
    var b = KvEventBatch.newBuilder().setWorkerId(workerId.value()).setSnapshot(snapshot);
    for (KvEvent e : batch) {
      b.addEvents(KvEventWire.toProto(e));
    }
    return b.build();
  }

  static EngineRequest toEngineRequest(String id, GenerateRequest request) {
    var s = request.getSampling();
    SamplingParams sampling =
        new SamplingParams(
            s.getTemperature(),
            s.getTopP() == 0f ? 1f : s.getTopP(),
            s.getTopK() <= 0 ? -1 : s.getTopK(),
            s.getMinP(),
            s.hasSeed() ? OptionalLong.of(s.getSeed()) : OptionalLong.empty(),
            s.getPresencePenalty(),
            s.getFrequencyPenalty(),
            s.getRepetitionPenalty() == 0f ? 1f : s.getRepetitionPenalty(),
            s.hasLogprobs() ? (int) Math.min(20, s.getLogprobs()) : -1);
    int[] stopIds = request.getStop().getStopTokenIdsList().stream().mapToInt(Integer::intValue).toArray();
    StopConditions stop =
        new StopConditions(request.getStop().getMaxTokens(), stopIds, request.getStop().getIgnoreEos());
    int[] prompt = request.getTokenIdsList().stream().mapToInt(Integer::intValue).toArray();
    return new EngineRequest(id, prompt, sampling, stop);
  }

  private static FinishReason toProto(RequestOutput.FinishReason reason) {
    return switch (reason) {
      case STOP -> FinishReason.FINISH_REASON_STOP;
      case LENGTH -> FinishReason.FINISH_REASON_LENGTH;
      case ABORTED -> FinishReason.FINISH_REASON_CANCELLED;
    };
  }
}
