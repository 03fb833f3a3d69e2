package dev.tandem.router.grpc;

import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerLoadReport;
import dev.tandem.router.LoadLedger;
import dev.tandem.router.WorkerLoad;
import io.grpc.ManagedChannel;
import dev.tandem.common.InternalTls;
import java.time.Duration;
import java.util.function.Function;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workers a router may send requests to. A worker is admitted only if its block size equals the
 * router's and it serves the same model as the workers already admitted; otherwise registration
 * fails loudly.
 *
 * <p>Thread-safe.
 */
public final class WorkerPool implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerPool.class);

  private final int blockSize;
  private final Duration connectTimeout;
  private final Duration loadInterval;
  private final Function<String, ManagedChannel> channels;
  /** Null: no lanes, every call on a worker's main channel. */
  private final CallLanes lanes;
  private final java.util.function.BiFunction<String, io.netty.channel.EventLoop, ManagedChannel> laneChannels;
  private final List<WorkerClient> workers = new CopyOnWriteArrayList<>();
  private final LoadLedger ledger = new LoadLedger();
  private final List<java.util.function.Consumer<WorkerClient>> joinListeners = new CopyOnWriteArrayList<>();
  private final List<java.util.function.Consumer<WorkerClient>> leaveListeners = new CopyOnWriteArrayList<>();
  private final java.util.Map<String, String> refused = new java.util.concurrent.ConcurrentHashMap<>();
  /** How long a worker that left keeps its open streams before its channel is cut. */
  static final Duration LEAVE_GRACE = Duration.ofMinutes(15);
  public static final Duration DEFAULT_UNRESPONSIVE_AFTER = Duration.ofSeconds(5);
  /** An engine step longer than this is taken for a hung engine (the built-in engine's steps are bounded by its token budget). */
  public static final Duration DEFAULT_STEP_TIMEOUT = Duration.ofSeconds(60);
  /** How long a worker's load stream may say nothing before it counts as stopped. */
  private volatile Duration unresponsiveAfter = DEFAULT_UNRESPONSIVE_AFTER;
  private volatile Duration stepTimeout = DEFAULT_STEP_TIMEOUT;
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("worker-pool-timer").daemon().factory());

  public WorkerPool(int blockSize, Duration connectTimeout, Duration loadInterval) {
    this(blockSize, connectTimeout, loadInterval, (InternalTls) null);
  }

  /** A pool whose channels are mutual TLS with the deployment's certificates ({@code tls}; null: plaintext). */
  public WorkerPool(int blockSize, Duration connectTimeout, Duration loadInterval, InternalTls tls) {
    this(blockSize, connectTimeout, loadInterval, address -> WorkerClient.channel(address, tls));
  }

  /**
   * A pool whose workers also get lane channels on {@code lanes}' event loops (see {@link
   * CallLanes}), as the frontend's HTTP connections do: a generation started on one of those loops
   * crosses no thread to and from the worker. Mutual TLS with {@code tls} (null: plaintext).
   */
  public WorkerPool(int blockSize, Duration connectTimeout, Duration loadInterval, InternalTls tls, CallLanes lanes) {
    this(blockSize, connectTimeout, loadInterval, address -> WorkerClient.channel(address, tls), lanes,
        (address, loop) -> WorkerClient.laneChannel(address, tls, loop, lanes.channelType()));
  }

  /** A pool that opens its channels with {@code channels} (tests: in-process channels by name). */
  public WorkerPool(int blockSize, Duration connectTimeout, Duration loadInterval, Function<String, ManagedChannel> channels) {
    this(blockSize, connectTimeout, loadInterval, channels, null, null);
  }

  private WorkerPool(int blockSize, Duration connectTimeout, Duration loadInterval, Function<String, ManagedChannel> channels,
      CallLanes lanes, java.util.function.BiFunction<String, io.netty.channel.EventLoop, ManagedChannel> laneChannels) {
    this.blockSize = blockSize;
    this.connectTimeout = connectTimeout;
    this.loadInterval = loadInterval;
    this.channels = channels;
    this.lanes = lanes;
    this.laneChannels = laneChannels;
    long checkMillis = Math.max(100, Math.min(1000, loadInterval.toMillis()));
    timer.scheduleWithFixedDelay(this::failSilentWorkers, checkMillis, checkMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  /**
   * A worker whose load reports stop for {@code after} (due every load interval; sent by the
   * worker's timer, not its engine, so a long step does not delay them) is marked unreachable and
   * its streams fail over (see {@link WorkerClient#failIfSilent}); {@link Duration#ZERO}: only
   * gRPC keepalive notices (about 15 s).
   *
   * @throws IllegalArgumentException if {@code after} is not zero and not above twice the load interval
   */
  public void unresponsiveAfter(Duration after) {
    if (!after.isZero() && after.compareTo(loadInterval.multipliedBy(2)) <= 0) {
      throw new IllegalArgumentException("--worker-unresponsive-s must exceed twice the load interval (" + loadInterval.multipliedBy(2)
          + "), or be 0 to rely on keepalive; was " + after);
    }
    this.unresponsiveAfter = after;
  }

  /**
   * A worker whose engine step runs longer than {@code after} is taken for hung (see {@link
   * WorkerClient#failIfStalled}); {@link Duration#ZERO}: never.
   */
  public void stepTimeout(Duration after) {
    if (after.isNegative()) {
      throw new IllegalArgumentException("--worker-step-timeout-s must be >= 0, was " + after);
    }
    this.stepTimeout = after;
  }

  private void failSilentWorkers() {
    Duration after = unresponsiveAfter;
    Duration step = stepTimeout;
    long now = System.nanoTime();
    for (WorkerClient w : workers) {
      try {
        if (!step.isZero()) {
          w.failIfStalled(step);
        }
        if (!after.isZero()) {
          w.failIfSilent(now, after);
        }
      } catch (RuntimeException e) {
        log.warn("checking worker {} for silence failed", w.workerId(), e);
      }
    }
  }

  /**
   * Connects to a worker and admits it.
   *
   * @throws IllegalStateException if it cannot be reached, or its block size or model differs
   */
  public WorkerClient add(String address) {
    WorkerClient client = WorkerClient.connect(address, channels.apply(address), connectTimeout);
    WorkerDescription reg = client.description();
    String refusal;
    synchronized (this) {
      refusal = refusal(reg, address);
      if (refusal == null) {
        workers.add(client);
        refused.remove(address);
      }
    }
    if (refusal != null) {
      client.close();
      refused.put(address, refusal);
      throw new IllegalStateException(refusal);
    }
    if (lanes != null && !client.openLanes(lanes, loop -> laneChannels.apply(address, loop))) {
      log.info("worker {} at {} gets no lane channels ({} open, the most is {}): its calls take its main channel",
          reg.workerId(), address, lanes.opened(), lanes.maxChannels());
    }
    client.watchLoad(timer, loadInterval);
    joinListeners.forEach(l -> l.accept(client));
    log.info(
        "registered worker {} at {} (engine {}, model {}{}, {} KV blocks of {}{}{})",
        reg.workerId(),
        address,
        reg.engine(),
        reg.modelName(),
        reg.weightQuantization().isEmpty() ? "" : " with weights in " + reg.weightQuantization(),
        reg.totalKvBlocks(),
        reg.blockSize(),
        reg.kvCacheDtype().isEmpty() ? "" : " in " + reg.kvCacheDtype(),
        reg.kvKeyRotation().isEmpty() ? "" : ", keys rotated with " + reg.kvKeyRotation());
    return client;
  }

  /**
   * Takes {@code worker} out: no new request goes to it, its index entries and links are dropped
   * (leave listeners), and the requests it is serving finish on their open streams before its
   * channel closes. Idempotent.
   */
  public void remove(WorkerClient worker) {
    if (!workers.remove(worker)) {
      return;
    }
    worker.retire(timer, LEAVE_GRACE);
    leaveListeners.forEach(l -> l.accept(worker));
    log.info("worker {} at {} left the pool; {} in flight there finish on their streams",
        worker.workerId(), worker.address(), ledger.routed(worker.workerId()).activeRequests());
  }

  /** Calls {@code listener} for every worker removed from now on. */
  public void onLeave(java.util.function.Consumer<WorkerClient> listener) {
    leaveListeners.add(listener);
  }

  /** Workers that answered but were refused (block size, model or id), by address, with why. */
  public java.util.Map<String, String> refused() {
    return java.util.Map.copyOf(refused);
  }

  /** Records that the worker at {@code address} was not admitted, for {@code /health}. */
  public void refuse(String address, String why) {
    refused.put(address, why);
  }

  /** Forgets a refusal (the worker went away). */
  public void forgetRefusal(String address) {
    refused.remove(address);
  }

  /** Calls {@code listener} for every worker admitted from now on, and for those already in. */
  public void onJoin(java.util.function.Consumer<WorkerClient> listener) {
    joinListeners.add(listener);
    workers.forEach(listener);
  }

  /** The timer the pool's clients use; routers share it for their own periodic work. */
  ScheduledExecutorService timer() {
    return timer;
  }

  /** Why a worker cannot join this pool, or null if it can. */
  private String refusal(WorkerDescription reg, String address) {
    String who = "worker " + reg.workerId() + " at " + address;
    if (reg.blockSize() != blockSize) {
      return who + " uses KV block size " + reg.blockSize() + " but this router uses " + blockSize
          + "; refusing it (prefix hashes would never match)";
    }
    for (WorkerClient other : workers) {
      if (!other.description().modelName().equals(reg.modelName())) {
        return who + " serves " + reg.modelName() + " but this pool serves " + other.description().modelName();
      }
      if (other.workerId().equals(reg.workerId())) {
        return "worker id " + reg.workerId() + " at " + address + " is already registered at " + other.address();
      }
    }
    return null;
  }

  /** What the router has committed to each worker and not yet seen end. */
  public LoadLedger ledger() {
    return ledger;
  }

  /**
   * {@code worker}'s last load report as routing should read it: when the report arrived before the
   * router last saw work it sent there end, the requests and prompt tokens it counts include that
   * work, so they are read as none — the ledger, taken beside it, holds what is still in flight —
   * until the next report (the worker sends one as soon as its load changes). Without this, a
   * prompt sent right after another ended reads as queued behind it.
   */
  public WorkerLoadReport report(WorkerClient worker) {
    WorkerLoadReport r = worker.lastLoadReport();
    long settled = ledger.settledNanos(worker.workerId());
    if (settled == 0 || worker.lastLoadReportNanos() - settled >= 0) {
      return r;
    }
    return new WorkerLoadReport(r.workerId(), 0, 0, 0, r.kvBlocksUsed(), r.kvBlocksTotal(), r.lastEventId(), r.prefillCost(),
        r.remotePrefillFallbacks(), r.stepSeconds(), r.draining(), r.stepRunningSeconds(), r.loraAdapters());
  }

  /** {@code worker}'s load as a selector sees it: the ledger's in-flight counts and its last report ({@link #report}). */
  public WorkerLoad load(WorkerClient worker) {
    LoadLedger.Routed routed = ledger.routed(worker.workerId());
    var r = report(worker);
    return new WorkerLoad(
        worker.workerId(),
        routed.activeRequests(),
        routed.prefillBlocks(),
        routed.decodeBlocks(),
        r.activeRequests(),
        r.waitingRequests(),
        r.kvBlocksUsed(),
        r.kvBlocksTotal(),
        new WorkerLoad.Speed(
            r.prefillCost(), r.queuedPrefillTokens(), worker.description().maxNumSeqs(), worker.description().maxBatchedTokens(),
            r.stepSeconds()));
  }

  public int blockSize() {
    return blockSize;
  }

  public List<WorkerClient> all() {
    return List.copyOf(workers);
  }

  /** Workers whose load stream is up. */
  public List<WorkerClient> reachable() {
    return workers.stream().filter(WorkerClient::reachable).toList();
  }

  /** Workers new requests may go to: reachable and not draining. */
  public List<WorkerClient> routable() {
    return workers.stream().filter(WorkerClient::routable).toList();
  }

  /** Waits until a worker that generates (not prefill-only) is admitted; false if none was within {@code timeout}. */
  public boolean awaitGenerating(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (workers.stream().allMatch(WorkerClient::isPrefillOnly)) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(50);
    }
    return true;
  }

  @Override
  public void close() {
    timer.shutdownNow();
    workers.forEach(WorkerClient::close);
  }
}
