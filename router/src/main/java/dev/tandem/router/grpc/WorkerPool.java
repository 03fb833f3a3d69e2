package dev.tandem.router.grpc;

import dev.tandem.proto.worker.v1.WorkerRegistration;
import java.time.Duration;
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
  private final List<WorkerClient> workers = new CopyOnWriteArrayList<>();
  private final List<java.util.function.Consumer<WorkerClient>> joinListeners = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("worker-pool-timer").daemon().factory());

  public WorkerPool(int blockSize, Duration connectTimeout, Duration loadInterval) {
    this.blockSize = blockSize;
    this.connectTimeout = connectTimeout;
    this.loadInterval = loadInterval;
  }

  /**
   * Connects to a worker and admits it.
   *
   * @throws IllegalStateException if it cannot be reached, or its block size or model differs
   */
  public WorkerClient add(String address) {
    WorkerClient client = WorkerClient.connect(address, connectTimeout);
    WorkerRegistration reg = client.registration();
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
        reg.getWorkerId(),
        address,
        reg.getEngine(),
        reg.getModelName(),
        reg.getTotalKvBlocks(),
        reg.getBlockSize());
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
  private String refusal(WorkerRegistration reg, String address) {
    String who = "worker " + reg.getWorkerId() + " at " + address;
    if (reg.getBlockSize() != blockSize) {
      return who + " uses KV block size " + reg.getBlockSize() + " but this router uses " + blockSize
          + "; refusing it (prefix hashes would never match)";
    }
    for (WorkerClient other : workers) {
      if (!other.registration().getModelName().equals(reg.getModelName())) {
        return who + " serves " + reg.getModelName() + " but this pool serves " + other.registration().getModelName();
      }
      if (other.workerId().value().equals(reg.getWorkerId())) {
        return "worker id " + reg.getWorkerId() + " at " + address + " is already registered at " + other.address();
      }
    }
    return null;
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
