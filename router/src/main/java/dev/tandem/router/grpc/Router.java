package dev.tandem.router.grpc;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.WorkerId;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.router.RoutingRequest;
import dev.tandem.router.WorkerLoad;
import dev.tandem.router.WorkerSelector;
import java.util.List;

/**
 * Sends each request to the worker its selector picks among the reachable workers.
 *
 * <p>Thread-safe.
 */
public final class Router {
  private final WorkerPool pool;
  private final WorkerSelector selector;

  public Router(WorkerPool pool, WorkerSelector selector) {
    this.pool = pool;
    this.selector = selector;
  }

  public WorkerPool pool() {
    return pool;
  }

  public WorkerSelector selector() {
    return selector;
  }

  /** The worker that gets this request. */
  public WorkerClient choose(GenerateRequest request) {
    List<WorkerClient> candidates = pool.reachable();
    if (candidates.isEmpty()) {
      throw new NoWorkerAvailableException(
          pool.all().isEmpty() ? "no worker is registered" : "no worker is reachable");
    }
    int[] tokens = request.getTokenIdsList().stream().mapToInt(Integer::intValue).toArray();
    RoutingRequest routing =
        new RoutingRequest(
            request.getRequestId(), tokens, BlockHasher.sequenceHashes(tokens, pool.blockSize()));
    List<WorkerLoad> loads = candidates.stream().map(WorkerClient::load).toList();
    WorkerId chosen = selector.select(routing, loads);
    for (WorkerClient c : candidates) {
      if (c.workerId().equals(chosen)) {
        return c;
      }
    }
    throw new IllegalStateException("selector " + selector.name() + " chose a non-candidate " + chosen);
  }

  /** Routes and starts a generation. */
  public WorkerClient.GenerationCall generate(
      GenerateRequest request, WorkerClient.GenerationListener listener) {
    return choose(request).generate(request, listener);
  }

  /** No worker can take a request now. */
  public static final class NoWorkerAvailableException extends RuntimeException {
    public NoWorkerAvailableException(String message) {
      super(message);
    }
  }
}
