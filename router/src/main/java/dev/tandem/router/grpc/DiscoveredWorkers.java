package dev.tandem.router.grpc;

import dev.tandem.discovery.Discovery;
import dev.tandem.discovery.Watch;
import dev.tandem.discovery.WorkerRecord;
import dev.tandem.discovery.WorkerSetListener;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a {@link WorkerPool} equal to what discovery says. A worker that appears is connected to and
 * described (the pool refuses another model, block size or a taken id, loudly, and {@code /health}
 * lists the refusal); once admitted, the router subscribes to its KV events and the split policy
 * probes its links (the pool's join listeners). A worker that disappears is taken out of the pool:
 * no new request goes there, its index entries and links are dropped, and what it is serving
 * finishes on its open streams.
 *
 * <p>Thread-safe: discovery calls come from its watch thread; connecting runs on virtual threads, so
 * a slow worker holds up nobody.
 */
public final class DiscoveredWorkers implements WorkerSetListener, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(DiscoveredWorkers.class);
  private static final Duration FIRST_RETRY = Duration.ofMillis(500);
  private static final Duration MAX_RETRY = Duration.ofSeconds(10);

  private final WorkerPool pool;
  private final Map<String, WorkerRecord> present = new ConcurrentHashMap<>();
  private final Map<String, WorkerClient> admitted = new ConcurrentHashMap<>();
  /** Connections still being tried, by worker id; cancelled when the worker leaves meanwhile. */
  private final Map<String, Future<?>> connecting = new ConcurrentHashMap<>();
  private final ExecutorService connects = Executors.newVirtualThreadPerTaskExecutor();
  private volatile Watch watch;

  private DiscoveredWorkers(WorkerPool pool) {
    this.pool = pool;
  }

  /** Starts following {@code discovery} into {@code pool}. */
  public static DiscoveredWorkers follow(Discovery discovery, WorkerPool pool) {
    DiscoveredWorkers d = new DiscoveredWorkers(pool);
    d.watch = discovery.watch(d);
    return d;
  }

  @Override
  public void added(WorkerRecord worker) {
    present.put(worker.workerId(), worker);
    if (worker.blockSize() != 0 && worker.blockSize() != pool.blockSize()) {
      String why = "worker " + worker.workerId() + " at " + worker.grpcAddress() + " registered KV block size " + worker.blockSize()
          + " but this router uses " + pool.blockSize() + "; refusing it (prefix hashes would never match)";
      log.error(why);
      pool.refuse(worker.grpcAddress(), why);
      return;
    }
    FutureTask<Void> attempt = new FutureTask<>(() -> connect(worker), null);
    Future<?> previous = connecting.put(worker.workerId(), attempt);
    if (previous != null) {
      previous.cancel(true);
    }
    connects.execute(() -> {
      try {
        attempt.run();
      } finally {
        connecting.remove(worker.workerId(), attempt);
      }
    });
  }

  /** Connects until admitted, refused, or the record is gone. */
  private void connect(WorkerRecord worker) {
    Duration retry = FIRST_RETRY;
    while (worker.equals(present.get(worker.workerId()))) {
      try {
        WorkerClient client = pool.add(worker.grpcAddress());
        if (!worker.equals(present.get(worker.workerId()))) {
          pool.remove(client); // it left while we were connecting
          return;
        }
        admitted.put(worker.workerId(), client);
        return;
      } catch (IllegalStateException e) {
        if (Thread.currentThread().isInterrupted()) {
          return; // the worker left while we were connecting
        }
        if (pool.refused().containsKey(worker.grpcAddress())) {
          log.error("discovery: {}", e.getMessage());
          return;
        }
        log.warn("discovery: worker {} at {} registered but does not answer ({}); retrying in {} ms",
            worker.workerId(), worker.grpcAddress(), e.getMessage(), retry.toMillis());
      } catch (RuntimeException e) {
        log.warn("discovery: cannot admit worker {} at {}: {}", worker.workerId(), worker.grpcAddress(), e.toString());
      }
      try {
        Thread.sleep(retry);
      } catch (InterruptedException e) {
        return;
      }
      retry = retry.multipliedBy(2).compareTo(MAX_RETRY) > 0 ? MAX_RETRY : retry.multipliedBy(2);
    }
  }

  @Override
  public void removed(WorkerRecord worker) {
    present.remove(worker.workerId(), worker);
    Future<?> attempt = connecting.remove(worker.workerId());
    if (attempt != null) {
      attempt.cancel(true); // interrupts a Describe still waiting for a worker that is gone
    }
    pool.forgetRefusal(worker.grpcAddress());
    WorkerClient client = admitted.remove(worker.workerId());
    if (client != null) {
      log.info("discovery: worker {} at {} left", worker.workerId(), worker.grpcAddress());
      pool.remove(client);
    }
  }

  /** The workers discovery lists now, admitted or not. */
  public Map<String, WorkerRecord> listed() {
    return Map.copyOf(present);
  }

  /** Whether the watch is connected to its backend. */
  public boolean connected() {
    return watch.connected();
  }

  @Override
  public void close() {
    watch.close();
    connects.shutdownNow();
  }
}
