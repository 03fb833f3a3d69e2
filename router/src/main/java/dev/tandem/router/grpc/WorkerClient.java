package dev.tandem.router.grpc;

import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.ModelCard;
import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerLoadReport;
import dev.tandem.common.WorkerRole;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.KvEventBatch;
import dev.tandem.proto.worker.v1.KvEventsRequest;
import dev.tandem.proto.worker.v1.LinkFigures;
import dev.tandem.proto.worker.v1.LoadLoraAdapterRequest;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.LoraAdapters;
import dev.tandem.proto.worker.v1.UnloadLoraAdapterRequest;
import dev.tandem.proto.worker.v1.ModelCardRequest;
import dev.tandem.proto.worker.v1.ProbeLinkRequest;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.router.Generation;
import dev.tandem.router.TokenListener;
import dev.tandem.wire.FromWire;
import dev.tandem.wire.ToWire;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.EventLoop;
import dev.tandem.common.InternalTls;
import dev.tandem.wire.GrpcTls;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The router's connection to one worker: its description, generation streams, link probes, and a
 * load watch that also tells whether the worker is reachable. Messages are mapped to records here
 * ({@code dev.tandem.wire}); what the router has committed to the worker is the {@link
 * dev.tandem.router.LoadLedger}'s business, not this class's.
 *
 * <p>Thread-safe.
 */
public final class WorkerClient implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerClient.class);
  /** The model card carries the tokenizer (over 10 MB for Qwen3). */
  private static final int MAX_MESSAGE_BYTES = 256 << 20;
  /** How often {@link #connect} says that a worker it waits for has not answered yet. */
  private static final Duration STILL_WAITING_EVERY = Duration.ofSeconds(10);

  private final String address;
  private final ManagedChannel channel;
  private final WorkerDescription description;
  private volatile WorkerLoadReport lastLoad;
  /** The LoRA adapters it takes requests for: its description's, then each load report's. */
  private volatile java.util.List<String> loraAdapters;
  private volatile boolean reachable = true;
  private volatile boolean closed;
  private volatile boolean retired;
  private volatile ClientCallStreamObserver<?> loadCall;
  private volatile long lastReportNanos = System.nanoTime();
  private final java.util.List<Runnable> reportListeners = new java.util.concurrent.CopyOnWriteArrayList<>();
  /** Its engine step has run past the step deadline (see {@link #failIfStalled}); cleared by a report of a step that ended. */
  private volatile boolean stalled;
  private volatile double stallSeconds = Double.MAX_VALUE;
  /** Generations in flight here, each failable at once when the worker stops answering. */
  private final java.util.Set<Open> open = java.util.concurrent.ConcurrentHashMap.newKeySet();
  /** One channel per loop of {@code loops}; null: every call takes {@link #channel}. */
  private record Lanes(CallLanes loops, ManagedChannel[] channels) {}

  private volatile Lanes lanes;

  /** One generation in flight: ends it for its listener with an error, and cancels its call. */
  @FunctionalInterface
  private interface Open {
    void fail(GenerationException error);
  }

  private WorkerClient(String address, ManagedChannel channel, WorkerDescription description) {
    this.address = address;
    this.channel = channel;
    this.description = description;
    this.lastLoad = WorkerLoadReport.empty(description.workerId());
    this.loraAdapters = description.loraAdapters();
  }

  /**
   * Connects and fetches the worker's description.
   *
   * @throws IllegalStateException naming the address if the worker does not answer in time
   */
  public static WorkerClient connect(String address, Duration timeout) {
    return connect(address, channel(address, null), timeout);
  }

  /**
   * A channel to {@code address} ({@code host:port}): plaintext, or mutual TLS with the
   * deployment's certificates ({@code tls}), the worker proving {@link InternalTls#PEER_NAME}.
   */
  public static ManagedChannel channel(String address, InternalTls tls) {
    return builder(address, tls).keepAliveWithoutCalls(true).build();
  }

  /**
   * A lane channel to {@code address}: its transport runs on {@code loop} (see {@link CallLanes}).
   * Keepalive pings only while it has calls; the main channel's load stream watches the worker.
   */
  static ManagedChannel laneChannel(String address, InternalTls tls, EventLoop loop, Class<? extends io.netty.channel.Channel> type) {
    return builder(address, tls).eventLoopGroup(loop).channelType(type).build();
  }

  private static NettyChannelBuilder builder(String address, InternalTls tls) {
    NettyChannelBuilder b = NettyChannelBuilder.forTarget(address, GrpcTls.channel(tls));
    if (tls != null) {
      b.overrideAuthority(InternalTls.PEER_NAME);
    }
    return b
        // Listeners only hand chunks to other executors (or, on a lane, run on the loop that
        // writes them out); running them on the transport thread saves a thread hop per message.
        .directExecutor()
        .maxInboundMessageSize(MAX_MESSAGE_BYTES)
        // A worker that stops answering (frozen, its host gone without a reset) is noticed within
        // ~15 s: its transport closes, its load stream breaks (unroutable), its streams fail cleanly.
        .keepAliveTime(10, TimeUnit.SECONDS)
        .keepAliveTimeout(5, TimeUnit.SECONDS);
  }

  /**
   * Opens this worker's lane channels, one per loop of {@code lanes} ({@code open} makes each),
   * and starts connecting them; generations started on one of those loops go out on its lane from
   * now on. Does nothing if the lanes' budget is spent (the main channel serves every call).
   *
   * @return whether lanes were opened
   */
  synchronized boolean openLanes(CallLanes loops, java.util.function.Function<EventLoop, ManagedChannel> open) {
    if (closed || lanes != null || !loops.reserve()) {
      return false;
    }
    ManagedChannel[] opened = new ManagedChannel[loops.size()];
    for (int i = 0; i < opened.length; i++) {
      opened[i] = open.apply(loops.loop(i));
      opened[i].getState(true); // connect now, not on the first request
    }
    lanes = new Lanes(loops, opened);
    return true;
  }

  /** The channel a call started on this thread takes: its loop's lane, else the main channel. */
  private ManagedChannel callChannel() {
    Lanes l = lanes;
    int i = l == null ? -1 : l.loops().current();
    return i >= 0 ? l.channels()[i] : channel;
  }

  /** Applies {@code action} to the main channel and every lane channel. */
  private void eachChannel(java.util.function.Consumer<ManagedChannel> action) {
    action.accept(channel);
    Lanes l = lanes;
    if (l != null) {
      for (ManagedChannel c : l.channels()) {
        action.accept(c);
      }
    }
  }

  /** Cuts the lane channels and gives their budget back. */
  private synchronized void closeLanes() {
    Lanes l = lanes;
    if (l != null) {
      lanes = null;
      for (ManagedChannel c : l.channels()) {
        c.shutdownNow();
      }
      l.loops().release();
    }
  }

  /**
   * Fetches the description of the worker at the other end of {@code channel} (tests pass an
   * in-process channel); the client owns the channel from now on.
   *
   * @throws IllegalStateException naming the address if the worker does not answer in time
   */
  public static WorkerClient connect(String address, ManagedChannel channel, Duration timeout) {
    return connect(address, channel, timeout, STILL_WAITING_EVERY);
  }

  /** {@link #connect(String, ManagedChannel, Duration)}, saying every {@code sayEvery} why the worker has not answered yet. */
  static WorkerClient connect(String address, ManagedChannel channel, Duration timeout, Duration sayEvery) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long left = deadline - System.nanoTime();
      long wait = Math.min(left, sayEvery.toNanos());
      try {
        var registration =
            WorkerGrpc.newBlockingStub(channel)
                .withWaitForReady()
                .withDeadlineAfter(Math.max(0, wait), TimeUnit.NANOSECONDS)
                .describe(DescribeRequest.getDefaultInstance());
        return new WorkerClient(address, channel, FromWire.description(registration));
      } catch (StatusRuntimeException e) {
        String said = String.valueOf(e.getStatus().getDescription());
        String because = unreachableBecause(said);
        if (e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED && wait < left) {
          // Said once per wait, in words: gRPC's own log of each failed attempt is turned off.
          log.info("worker at {} has not answered yet{}; waiting up to {} s more", address, because,
              Math.round((deadline - System.nanoTime()) / 1e9));
          continue;
        }
        channel.shutdownNow();
        throw new IllegalStateException("worker at " + address + " did not answer within " + timeout.toMillis() / 1000.0 + " s"
            + (because.isEmpty() ? ": " + e.getStatus().getCode() + " " + said.lines().findFirst().orElse("") : because), e); // no stack traces
      }
    }
  }

  /** Why a worker could not be reached, in words, where gRPC's status description shows it; empty otherwise. */
  static String unreachableBecause(String said) {
    if (said.contains("Unable to resolve host")) {
      return " (its host name does not resolve)";
    }
    if (said.contains("Connection refused")) {
      return " (connection refused: nothing listens on that port)";
    }
    return "";
  }

  public String address() {
    return address;
  }

  public WorkerId workerId() {
    return description.workerId();
  }

  public WorkerDescription description() {
    return description;
  }

  /** True for a prefill worker: it computes prompts for decode workers and generates nothing itself. */
  public boolean isPrefillOnly() {
    return description.role() == WorkerRole.PREFILL;
  }

  /** True if this worker has a KV transfer agent (a prefill, decode or transfer-enabled aggregated worker). */
  public boolean movesKv() {
    return description.movesKv();
  }

  /** The link figures a probe measured. */
  public record Link(String backend, double latencyMicros, double bytesPerSecond) {}

  /** Asks this worker to measure its KV link to the worker at {@code peerAddress} over {@code backend} (empty: its primary). */
  public CompletableFuture<Link> probeLink(String peerAddress, String backend, Duration timeout) {
    var result = new CompletableFuture<Link>();
    WorkerGrpc.newStub(channel)
        .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
        .probeLink(
            ProbeLinkRequest.newBuilder().setPeerAddress(peerAddress).setBackend(backend).build(),
            new StreamObserver<>() {
              @Override
              public void onNext(LinkFigures f) {
                result.complete(new Link(f.getBackend(), f.getLatencyUs(), f.getBytesPerS()));
              }

              @Override
              public void onError(Throwable error) {
                result.completeExceptionally(error);
              }

              @Override
              public void onCompleted() {
                result.completeExceptionally(new IllegalStateException("probe answered nothing"));
              }
            });
    return result;
  }

  public boolean reachable() {
    return reachable && !closed;
  }

  /** Whether this worker runs requests with LoRA adapter {@code loraName} now, as its last load report says (null: the base model, which every worker runs). */
  public boolean serves(String loraName) {
    return loraName == null || loraAdapters.contains(loraName);
  }

  /** The LoRA adapters this worker takes requests for now, as its last load report says, in the order loaded. */
  public java.util.List<String> loraAdapters() {
    return loraAdapters;
  }

  /**
   * Asks this worker to load the LoRA adapter in {@code path} (on its file system) as {@code name};
   * completes with the adapters it then takes, or fails with the worker's status (FAILED_PRECONDITION
   * where it takes no runtime updates, INVALID_ARGUMENT naming what is wrong with the adapter). Load
   * reports carry the change to every router.
   */
  public CompletableFuture<java.util.List<String>> loadLoraAdapter(String name, String path, Duration timeout) {
    var result = new CompletableFuture<java.util.List<String>>();
    WorkerGrpc.newStub(channel)
        .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
        .loadLoraAdapter(LoadLoraAdapterRequest.newBuilder().setLoraName(name).setLoraPath(path).build(), adaptersInto(result));
    return result;
  }

  /** Asks this worker to stop taking requests for LoRA adapter {@code name} (NOT_FOUND where it has none of that name). */
  public CompletableFuture<java.util.List<String>> unloadLoraAdapter(String name, Duration timeout) {
    var result = new CompletableFuture<java.util.List<String>>();
    WorkerGrpc.newStub(channel)
        .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
        .unloadLoraAdapter(UnloadLoraAdapterRequest.newBuilder().setLoraName(name).build(), adaptersInto(result));
    return result;
  }

  private static StreamObserver<LoraAdapters> adaptersInto(CompletableFuture<java.util.List<String>> result) {
    return new StreamObserver<>() {
      @Override
      public void onNext(LoraAdapters a) {
        result.complete(java.util.List.copyOf(a.getNamesList()));
      }

      @Override
      public void onError(Throwable error) {
        result.completeExceptionally(error);
      }

      @Override
      public void onCompleted() {
        result.completeExceptionally(new IllegalStateException("the worker answered nothing"));
      }
    };
  }

  /**
   * Whether new requests may go here: reachable, not draining (as its last load report says) and not
   * retired (gone from discovery).
   */
  public boolean routable() {
    return reachable() && !retired && !lastLoad.draining() && !stalled;
  }

  /** True once the worker reported that it is draining. */
  public boolean draining() {
    return lastLoad.draining();
  }

  /**
   * Stops watching the worker and lets the calls in flight finish: the channel takes no new calls,
   * and is cut after {@code grace} if some are still open then.
   */
  void retire(ScheduledExecutorService timer, Duration grace) {
    retired = true;
    closed = true;
    ClientCallStreamObserver<?> c = loadCall;
    if (c != null) {
      c.cancel("worker left discovery", null);
    }
    eachChannel(ManagedChannel::shutdown);
    timer.schedule(() -> {
      channel.shutdownNow();
      closeLanes();
    }, grace.toMillis(), TimeUnit.MILLISECONDS);
  }

  public WorkerLoadReport lastLoadReport() {
    return lastLoad;
  }

  /** When the last load report arrived (System.nanoTime). */
  public long lastLoadReportNanos() {
    return lastReportNanos;
  }

  /** Fetches the model card (tokenizer files included). */
  public ModelCard modelCard(Duration timeout) {
    return FromWire.modelCard(
        WorkerGrpc.newBlockingStub(channel)
            .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
            .getModelCard(ModelCardRequest.getDefaultInstance()));
  }

  /**
   * Starts a generation on this worker alone (no routing, no reservation); the listener hears every
   * chunk, then completion or an error. Cancelling after the end does nothing.
   */
  public Generation generate(GenerationRequest request, TokenListener listener) {
    AtomicBoolean finished = new AtomicBoolean(); // no cancel needed any more
    AtomicBoolean ended = new AtomicBoolean(); // the listener heard its end
    Open[] self = new Open[1];
    var observer =
        new ClientResponseObserver<GenerateRequest, GenerateChunk>() {
          private volatile ClientCallStreamObserver<GenerateRequest> call;

          @Override
          public void beforeStart(ClientCallStreamObserver<GenerateRequest> requestStream) {
            this.call = requestStream;
          }

          @Override
          public void onNext(GenerateChunk chunk) {
            if (ended.get()) {
              return;
            }
            var c = FromWire.chunk(chunk);
            if (c.finished()) {
              finished.set(true);
            }
            listener.onChunk(c);
          }

          @Override
          public void onError(Throwable error) {
            finished.set(true);
            if (ended.compareAndSet(false, true)) {
              open.remove(self[0]);
              listener.onError(FromWire.failure(error));
            }
          }

          @Override
          public void onCompleted() {
            finished.set(true);
            if (ended.compareAndSet(false, true)) {
              open.remove(self[0]);
              listener.onCompleted();
            }
          }
        };
    self[0] = error -> {
      if (ended.compareAndSet(false, true)) {
        open.remove(self[0]);
        finished.set(true);
        ClientCallStreamObserver<GenerateRequest> call = observer.call;
        if (call != null) {
          call.cancel(error.getMessage(), null);
        }
        listener.onError(error);
      }
    };
    open.add(self[0]);
    WorkerGrpc.newStub(callChannel()).generate(ToWire.request(request), observer);
    if (ended.get() && observer.call != null) {
      observer.call.cancel("the worker stopped answering as the call started", null); // failed in between
    }
    return reason -> {
      ClientCallStreamObserver<GenerateRequest> call = observer.call;
      if (call != null && finished.compareAndSet(false, true)) {
        call.cancel(reason, null);
      }
    };
  }

  /** Opens the worker's KV event stream (cancel through the calling gRPC context). */
  void kvEvents(KvEventsRequest request, StreamObserver<KvEventBatch> observer) {
    WorkerGrpc.newStub(channel).subscribeKvEvents(request, observer);
  }

  /** Calls {@code listener} after each load report is taken in (on the gRPC thread). */
  public void onLoadReport(Runnable listener) {
    reportListeners.add(listener);
  }

  /** Watches the worker's load; a broken stream marks it unreachable and is retried. */
  void watchLoad(ScheduledExecutorService timer, Duration interval) {
    if (closed) {
      return;
    }
    WorkerGrpc.newStub(channel)
        .watchLoad(
            WatchLoadRequest.newBuilder().setIntervalMs((int) interval.toMillis()).build(),
            new ClientResponseObserver<WatchLoadRequest, LoadReport>() {
              @Override
              public void beforeStart(ClientCallStreamObserver<WatchLoadRequest> call) {
                loadCall = call;
              }

              @Override
              public void onNext(LoadReport report) {
                lastLoad = FromWire.load(report);
                loraAdapters = lastLoad.loraAdapters();
                lastReportNanos = System.nanoTime();
                reportListeners.forEach(Runnable::run);
                if (stalled && lastLoad.stepRunningSeconds() < stallSeconds) {
                  log.info("worker {} at {}: its engine steps again", workerId(), address);
                  stalled = false;
                }
                if (!reachable) {
                  log.info("worker {} at {} is reachable again", workerId(), address);
                }
                reachable = true;
              }

              @Override
              public void onError(Throwable error) {
                if (closed) {
                  return;
                }
                if (reachable) {
                  log.warn("worker {} at {} is unreachable: {}", workerId(), address, error.toString());
                }
                reachable = false;
                // Try again in a second, and let the channel reconnect then instead of after its
                // exponential backoff (up to two minutes): a restarted worker is back in ~1 s.
                timer.schedule(() -> {
                  eachChannel(ManagedChannel::resetConnectBackoff);
                  watchLoad(timer, interval);
                }, 1, TimeUnit.SECONDS);
              }

              @Override
              public void onCompleted() {
                onError(new IllegalStateException("load stream ended"));
              }
            });
  }

  /**
   * A worker whose load stream, due every interval, has said nothing for {@code after} is frozen
   * or cut off even if its connection looks open (SIGSTOP, a partition): it is marked unreachable
   * (no new requests until a report arrives again), its load stream is restarted, and every
   * generation in flight here ends with an UNAVAILABLE error, so that the frontend moves it to
   * another worker instead of waiting for TCP keepalive.
   *
   * @return true if this call marked it (it was reachable and silent too long)
   */
  boolean failIfSilent(long nowNanos, Duration after) {
    long silentNanos = nowNanos - lastReportNanos;
    if (closed || !reachable || silentNanos <= after.toNanos()) {
      return false;
    }
    reachable = false;
    String why = String.format("worker %s at %s stopped answering: no load report for %.1f s", workerId(), address, silentNanos / 1e9);
    log.warn("{}; moving its {} streams elsewhere", why, open.size());
    var error = new GenerationException(GenerationException.Kind.UNAVAILABLE, "UNAVAILABLE", why, null);
    for (Open o : open.toArray(Open[]::new)) {
      o.fail(error);
    }
    ClientCallStreamObserver<?> load = loadCall;
    if (load != null) {
      load.cancel(why, null); // its onError retries the watch, which marks the worker reachable on its first report
    }
    return true;
  }

  /**
   * A worker whose engine step has run longer than {@code after} (its timer still reports, its
   * engine is hung) takes no new requests until a report shows the step over, and every
   * generation in flight there ends at once with UNAVAILABLE (and is cancelled there), which the
   * frontend migrates.
   *
   * @return true if this call marked it
   */
  boolean failIfStalled(Duration after) {
    double running = lastLoad.stepRunningSeconds();
    if (closed || stalled || !reachable || running <= after.toNanos() / 1e9) {
      return false;
    }
    stallSeconds = after.toNanos() / 1e9;
    stalled = true;
    String why = String.format("worker %s at %s is hung: its engine step has run for %.1f s", workerId(), address, running);
    log.warn("{}; moving its {} streams elsewhere", why, open.size());
    var error = new GenerationException(GenerationException.Kind.UNAVAILABLE, "UNAVAILABLE", why, null);
    for (Open o : open.toArray(Open[]::new)) {
      o.fail(error);
    }
    return true;
  }

  /** Whether the engine is taken for hung (see {@link #failIfStalled}). */
  public boolean stalled() {
    return stalled;
  }

  @Override
  public void close() {
    closed = true;
    channel.shutdownNow();
    closeLanes();
  }
}
