package dev.tandem.router.grpc;

import dev.tandem.router.MetricNames;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Publishes a router's state on a meter registry: its KV index, split decisions, open
 * reservations, predicted overlap, and each worker's last load as the router sees it (for workers
 * that join later too). Meters read the router's state when scraped; nothing is copied.
 */
public final class RouterMetrics {
  private final MeterRegistry registry;
  private final Router router;
  private final Set<String> watchedWorkers = ConcurrentHashMap.newKeySet();

  private RouterMetrics(MeterRegistry registry, Router router) {
    this.registry = registry;
    this.router = router;
  }

  /** Binds {@code router}'s meters to {@code registry}. */
  public static RouterMetrics bind(Router router, MeterRegistry registry) {
    RouterMetrics m = new RouterMetrics(registry, router);
    m.bindRouter();
    router.pool().onJoin(m::bindWorker);
    return m;
  }

  private void bindRouter() {
    router.kv().ifPresent(kv -> {
      FunctionCounter.builder(MetricNames.EVENTS_APPLIED, kv, k -> k.index().eventsApplied()).register(registry);
      FunctionCounter.builder(MetricNames.UNKNOWN_PARENTS, kv, k -> k.index().unknownParents()).register(registry);
      FunctionCounter.builder(MetricNames.UNKNOWN_REMOVALS, kv, k -> k.index().unknownRemovals()).register(registry);
      FunctionCounter.builder(MetricNames.EVENT_GAPS, kv, KvRouting::eventGaps).register(registry);
      FunctionCounter.builder(MetricNames.SNAPSHOTS, kv, KvRouting::eventSnapshots).register(registry);
      Gauge.builder(MetricNames.INDEX_BLOCKS, kv, k -> k.index().blockCount()).register(registry);
    });
    var disagg = router.disaggregation();
    String decisions = "requests a prefill worker could have taken, by whether the router split them";
    FunctionCounter.builder(MetricNames.DISAGG_DECISIONS, disagg, d -> d.splits())
        .description(decisions).tag("decision", "split").register(registry);
    FunctionCounter.builder(MetricNames.DISAGG_DECISIONS, disagg, d -> d.keptLocal())
        .description(decisions).tag("decision", "local").register(registry);
    FunctionCounter.builder(MetricNames.PREDICTED_OVERLAP, router, r -> r.predictedOverlapTokens())
        .description("prompt tokens the router expected the chosen worker to hold").register(registry);
    Gauge.builder(MetricNames.OPEN_RESERVATIONS, router.pool().ledger(), l -> l.open())
        .description("routed requests whose load is still reserved").register(registry);
  }

  private void bindWorker(WorkerClient w) {
    String id = w.workerId().value();
    if (!watchedWorkers.add(id)) {
      return;
    }
    Gauge.builder(MetricNames.WORKER_ACTIVE_REQUESTS, w, c -> c.lastLoadReport().activeRequests()).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.WORKER_KV_BLOCKS_USED, w, c -> c.lastLoadReport().kvBlocksUsed()).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.WORKER_KV_BLOCKS_TOTAL, w, c -> c.lastLoadReport().kvBlocksTotal()).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.WORKER_REACHABLE, w, c -> c.reachable() ? 1 : 0).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.WORKER_PREFILL_RATE, w, c -> c.lastLoadReport().prefillTokensPerSecond()).tag("worker", id).register(registry);
    router.kv().ifPresent(kv -> Gauge.builder(MetricNames.WORKER_MISSING_EVENTS, kv,
            k -> k.workersWithoutEvents().contains(w.workerId()) ? 1 : 0)
        .tag("worker", id).register(registry));
  }
}
