package dev.tandem.router.grpc;

import dev.tandem.common.WorkerId;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.KvEventBatch;
import dev.tandem.proto.worker.v1.KvEventsRequest;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.ModelCard;
import dev.tandem.proto.worker.v1.ModelCardRequest;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import dev.tandem.router.WorkerLoad;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The router's connection to one worker: its registration, generation streams, and a load watch
 * that also tells whether the worker is reachable.
 *
 * <p>Thread-safe.
 */
public final class WorkerClient implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerClient.class);
  /** The model card carries the tokenizer (over 10 MB for Qwen3). */
  private static final int MAX_MESSAGE_BYTES = 256 << 20;

  /** Receives one generation's chunks, on a gRPC thread. */
  public interface GenerationListener {
    void onChunk(GenerateChunk chunk);

    void onError(Throwable error);

    void onCompleted();
  }

  /** A generation in flight; {@link #cancel} aborts it on the worker. */
  public interface GenerationCall {
    void cancel(String reason);
  }

  private final String address;
  private final ManagedChannel channel;
  private final WorkerRegistration registration;
  private final AtomicInteger routedActive = new AtomicInteger();
  private final AtomicInteger routedPrefillBlocks = new AtomicInteger();
  private final AtomicInteger routedDecodeBlocks = new AtomicInteger();
  private volatile LoadReport lastLoad;
  private volatile boolean reachable = true;
  private volatile boolean closed;

  private WorkerClient(String address, ManagedChannel channel, WorkerRegistration registration) {
    this.address = address;
    this.channel = channel;
    this.registration = registration;
    this.lastLoad = LoadReport.newBuilder().setWorkerId(registration.getWorkerId()).build();
  }

  /**
   * Connects and fetches the worker's registration.
   *
   * @throws IllegalStateException naming the address if the worker does not answer in time
   */
  public static WorkerClient connect(String address, Duration timeout) {
    ManagedChannel channel =
        NettyChannelBuilder.forTarget(address)
            .usePlaintext()
            // Listeners only hand chunks to other executors; running them on the transport
            // thread saves a thread hop per message.
            .directExecutor()
            .maxInboundMessageSize(MAX_MESSAGE_BYTES)
            .build();
    try {
      WorkerRegistration registration =
          WorkerGrpc.newBlockingStub(channel)
              .withWaitForReady()
              .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
              .describe(DescribeRequest.getDefaultInstance());
      return new WorkerClient(address, channel, registration);
    } catch (StatusRuntimeException e) {
      channel.shutdownNow();
      throw new IllegalStateException(
          "worker at " + address + " did not answer within " + timeout + ": " + e.getStatus(), e);
    }
  }

  public String address() {
    return address;
  }

  public WorkerId workerId() {
    return new WorkerId(registration.getWorkerId());
  }

  public WorkerRegistration registration() {
    return registration;
  }

  /** True for a prefill worker: it computes prompts for decode workers and generates nothing itself. */
  public boolean isPrefillOnly() {
    return registration.getRole() == dev.tandem.proto.worker.v1.WorkerRole.WORKER_ROLE_PREFILL;
  }

  /** True if this worker has a KV transfer agent (a prefill, decode or transfer-enabled aggregated worker). */
  public boolean movesKv() {
    return !registration.getKvTransferAddress().isEmpty();
  }

  /** Asks this worker to measure its KV link to the worker at {@code peerAddress}. */
  public java.util.concurrent.CompletableFuture<dev.tandem.proto.worker.v1.LinkFigures> probeLink(String peerAddress, Duration timeout) {
    var result = new java.util.concurrent.CompletableFuture<dev.tandem.proto.worker.v1.LinkFigures>();
    WorkerGrpc.newStub(channel)
        .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
        .probeLink(
            dev.tandem.proto.worker.v1.ProbeLinkRequest.newBuilder().setPeerAddress(peerAddress).build(),
            new StreamObserver<>() {
              @Override
              public void onNext(dev.tandem.proto.worker.v1.LinkFigures figures) {
                result.complete(figures);
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

  public int routedActiveRequests() {
    return routedActive.get();
  }

  /** The load as a selector sees it. */
  public WorkerLoad load() {
    LoadReport r = lastLoad;
    return new WorkerLoad(
        workerId(),
        routedActive.get(),
        routedPrefillBlocks.get(),
        routedDecodeBlocks.get(),
        r.getActiveRequests(),
        r.getWaitingRequests(),
        r.getKvBlocksUsed(),
        r.getKvBlocksTotal());
  }

  public LoadReport lastLoadReport() {
    return lastLoad;
  }

  /** Fetches the model card (tokenizer files included). */
  public ModelCard modelCard(Duration timeout) {
    return WorkerGrpc.newBlockingStub(channel)
        .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
        .getModelCard(ModelCardRequest.getDefaultInstance());
  }

  /**
   * Load the router has committed to this worker for one request: its prefill blocks until the
   * first token, its decode blocks and one active request until the end. Both releases are
   * idempotent.
   */
  public final class Reservation {
    private final int prefillBlocks;
    private final int decodeBlocks;
    private final AtomicBoolean prefilled = new AtomicBoolean();
    private final AtomicBoolean finished = new AtomicBoolean();

    private Reservation(int prefillBlocks, int decodeBlocks) {
      this.prefillBlocks = prefillBlocks;
      this.decodeBlocks = decodeBlocks;
      routedActive.incrementAndGet();
      routedPrefillBlocks.addAndGet(prefillBlocks);
      routedDecodeBlocks.addAndGet(decodeBlocks);
    }

    /** The first token arrived: the prefill is done. */
    public void firstToken() {
      if (prefilled.compareAndSet(false, true)) {
        routedPrefillBlocks.addAndGet(-prefillBlocks);
      }
    }

    /** The request ended (finished, failed or cancelled), or was never started. */
    public void release() {
      firstToken();
      if (finished.compareAndSet(false, true)) {
        routedActive.decrementAndGet();
        routedDecodeBlocks.addAndGet(-decodeBlocks);
      }
    }
  }

  /** Commits load to this worker ahead of sending it a request. */
  public Reservation reserve(int prefillBlocks, int decodeBlocks) {
    return new Reservation(prefillBlocks, decodeBlocks);
  }

  /** Starts a generation with no load accounted to it beyond one active request (tests, tools). */
  public GenerationCall generate(GenerateRequest request, GenerationListener listener) {
    return generate(request, reserve(0, 0), listener);
  }

  /**
   * Starts a generation; the listener hears every chunk, then completion or an error. The
   * reservation is released as the request progresses (prefill at the first chunk, the rest at the
   * end).
   */
  public GenerationCall generate(GenerateRequest request, Reservation reservation, GenerationListener listener) {
    AtomicBoolean finished = new AtomicBoolean();
    Runnable firstToken = reservation::firstToken;
    Runnable finish =
        () -> {
          finished.set(true);
          reservation.release();
        };
    var observer =
        new ClientResponseObserver<GenerateRequest, GenerateChunk>() {
          private volatile ClientCallStreamObserver<GenerateRequest> call;

          @Override
          public void beforeStart(ClientCallStreamObserver<GenerateRequest> requestStream) {
            this.call = requestStream;
          }

          @Override
          public void onNext(GenerateChunk chunk) {
            firstToken.run();
            if (chunk.getFinishReason() != dev.tandem.proto.worker.v1.FinishReason.FINISH_REASON_UNSPECIFIED) {
              // Released before the listener answers the client: a client's next request must not
              // be routed against the load of the one it has just seen finish.
              finish.run();
            }
            listener.onChunk(chunk);
          }

          @Override
          public void onError(Throwable error) {
            finish.run();
            listener.onError(error);
          }

          @Override
          public void onCompleted() {
            finish.run();
            listener.onCompleted();
          }
        };
    WorkerGrpc.newStub(channel).generate(request, observer);
    return reason -> {
      ClientCallStreamObserver<GenerateRequest> call = observer.call;
      if (call != null && !finished.get()) {
        call.cancel(reason, null);
      }
      finish.run();
    };
  }

  /** Opens the worker's KV event stream (cancel through the calling gRPC context). */
  void kvEvents(KvEventsRequest request, StreamObserver<KvEventBatch> observer) {
    WorkerGrpc.newStub(channel).subscribeKvEvents(request, observer);
  }

  /** Watches the worker's load; a broken stream marks it unreachable and is retried. */
  void watchLoad(ScheduledExecutorService timer, Duration interval) {
    if (closed) {
      return;
    }
    WorkerGrpc.newStub(channel)
        .watchLoad(
            WatchLoadRequest.newBuilder().setIntervalMs((int) interval.toMillis()).build(),
            new StreamObserver<>() {
              @Override
              public void onNext(LoadReport report) {
                lastLoad = report;
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
                timer.schedule(() -> watchLoad(timer, interval), 1, TimeUnit.SECONDS);
              }

              @Override
              public void onCompleted() {
                onError(new IllegalStateException("load stream ended"));
              }
            });
  }

  @Override
  public void close() {
    closed = true;
    channel.shutdownNow();
  }
}
