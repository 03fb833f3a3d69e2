package dev.tandem.frontend.http;

import dev.tandem.common.GenerationRequest;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.router.NoWorkerAvailableException;
import dev.tandem.router.RequestRouter;
import dev.tandem.router.Route;
import io.netty.channel.ChannelHandlerContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * How one HTTP request's generations find their workers: all routed or none (reservations only,
 * so that nothing starts unless all can), on the worker the client pinned ({@code tandem.worker_id})
 * where it did, and — while no worker serves at all — waiting up to {@code --worker-wait-s}, tried
 * again every 100 ms on the request's event loop.
 *
 * <p>Threading: the request's event loop only.
 */
final class RunRouting {
  private final ChannelHandlerContext ctx;
  private final RequestRouter router;
  private final FrontendMetrics metrics;
  private final Duration workerWait;
  private final String pinnedWorker;
  private long waitingSince; // nanoTime when it started waiting for a worker; 0 while not waiting

  /** @param pinnedWorker the worker the client asked for, or null */
  RunRouting(ChannelHandlerContext ctx, RequestRouter router, FrontendMetrics metrics, Duration workerWait, String pinnedWorker) {
    this.ctx = ctx;
    this.router = router;
    this.metrics = metrics;
    this.workerWait = workerWait;
    this.pinnedWorker = pinnedWorker;
  }

  /**
   * Routes every request, or none: when no worker serves and the wait allows, schedules {@code
   * retry} in 100 ms and returns null.
   *
   * @return the routes, in the requests' order, or null while it waits
   * @throws ApiException when they cannot be routed (the wait is over then)
   */
  List<Route> routeAll(List<GenerationRequest> requests, Runnable retry) {
    List<Route> routes = new ArrayList<>();
    try {
      for (GenerationRequest r : requests) {
        routes.add(route(r));
      }
      stopWaiting();
      return routes;
    } catch (NoWorkerAvailableException e) {
      routes.forEach(Route::release);
      if (e.noneServing() && mayWait()) {
        ctx.executor().schedule(retry, 100, TimeUnit.MILLISECONDS);
        return null;
      }
      stopWaiting();
      throw GenerationErrors.routing(e);
    } catch (RuntimeException e) {
      routes.forEach(Route::release);
      stopWaiting();
      throw GenerationErrors.routing(e);
    }
  }

  /** One generation to the worker the client pinned, or the one the router picks. */
  Route route(GenerationRequest request) {
    try {
      return router.route(request, pinnedWorker);
    } catch (IllegalArgumentException e) {
      boolean known = router.workers().stream().anyMatch(w -> w.description().workerId().value().equals(pinnedWorker));
      if (known) { // registered but not reachable (or draining): the service, not the request, is at fault
        throw new ApiException(503, "Worker '" + pinnedWorker + "' is registered but not reachable now.",
            "service_unavailable", "tandem.worker_id", null);
      }
      throw ApiException.invalid("tandem.worker_id", "No worker has id '" + pinnedWorker + "'.");
    }
  }

  /** Whether this request may (still) wait for a worker; starts the wait's clock and count. */
  private boolean mayWait() {
    if (workerWait.isZero() || workerWait.isNegative()) {
      return false;
    }
    long now = System.nanoTime();
    if (waitingSince == 0) {
      waitingSince = now;
      metrics.waitingChange(1);
      return true;
    }
    return now - waitingSince < workerWait.toNanos();
  }

  /** The request no longer waits for a worker (routed, failed or gone). */
  void stopWaiting() {
    if (waitingSince != 0) {
      waitingSince = 0;
      metrics.waitingChange(-1);
    }
  }
}
