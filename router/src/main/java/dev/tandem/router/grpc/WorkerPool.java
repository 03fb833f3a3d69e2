package dev.tandem.router.grpc;

import dev.tandem.common.WorkerDescription;
import dev.tandem.router.LoadLedger;
import dev.tandem.router.WorkerLoad;
import io.grpc.ManagedChannel;
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
  private final List<WorkerClient> workers = new CopyOnWriteArrayList<>();
  private final LoadLedger ledger = new LoadLedger();
  private final List<java.util.function.Consumer<WorkerClient>> joinListeners = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("worker-pool-timer").daemon().factory());

  public WorkerPool(int blockSize, Duration connectTimeout, Duration loadInterval) {
    this(blockSize, connectTimeout, loadInterval, WorkerClient::channel);
  }

  /** A pool that opens its channels with {@code channels} (tests: in-process channels by name). */
  public WorkerPool(int blockSize, Duration connectTimeout, Duration loadInterval, Function<String, ManagedChannel> channels) {
    this.blockSize = blockSize;
    this.connectTimeout = connectTimeout;
    this.loadInterval = loadInterval;
    this.channels = channels;
  }

  /**
   * Connects to a worker and admits it.
   *
   * @throws IllegalStateException if it cannot be reached, or its block size or model differs
   */
  public WorkerClient add(String address) {
    WorkerClient client = WorkerClient.connect(address, channels.apply(address), connectTimeout);
    WorkerDescription reg = client.description();
    String refusal = refusal(reg, address);
    if (refusal != null) {
      client.close();
      throw new IllegalStateException(refusal);
    }
    workers.add(client);
    client.watchLoad(timer, loadInterval);
    joinListeners.forEach(l -> l.accept(client));
    log.info(
        "registered worker {} at {} (engine {}, model {}, {} KV blocks of {})",
        reg.workerId(),
        address,
        reg.engine(),
        reg.modelName(),
        reg.totalKvBlocks(),
        reg.blockSize());
    return client;
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

  /** {@code worker}'s load as a selector sees it: the ledger's in-flight counts and its last report. */
  public WorkerLoad load(WorkerClient worker) {
    LoadLedger.Routed routed = ledger.routed(worker.workerId());
    var r = worker.lastLoadReport();
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

  @Override
  public void close() {
    timer.shutdownNow();
    workers.forEach(WorkerClient::close);
  }
}
