package dev.tandem.router.grpc;

import dev.tandem.router.MetricNames;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Publishes a router's state on a meter registry: its KV index, split decisions, open
 * reservations, predicted overlap, and each worker's last load as the router sees it (for workers
 * that join later too). Meters read the router's state when scraped; nothing is copied.
 */
public final class RouterMetrics {
  private final MeterRegistry registry;
  private final Router router;
  /** Each worker's meters, by worker id, removed when it leaves (a worker that returns gets new ones). */
  private final java.util.Map<String, java.util.List<io.micrometer.core.instrument.Meter>> workerMeters = new ConcurrentHashMap<>();

  private RouterMetrics(MeterRegistry registry, Router router) {
    this.registry = registry;
    this.router = router;
  }

  /** Binds {@code router}'s meters to {@code registry}. */
  public static RouterMetrics bind(Router router, MeterRegistry registry) {
    RouterMetrics m = new RouterMetrics(registry, router);
    m.bindRouter();
    router.pool().onJoin(m::bindWorker);
    router.pool().onLeave(m::unbindWorker);
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
    for (dev.tandem.common.WorkerRole role : dev.tandem.common.WorkerRole.values()) {
      Gauge.builder(MetricNames.WORKERS, router.pool(), p -> p.all().stream().filter(w -> w.description().role() == role).count())
          .description("workers admitted, by role").tag("role", role.cliName()).register(registry);
    }
    Gauge.builder(MetricNames.REFUSED_WORKERS, router.pool(), p -> p.refused().size())
        .description("workers that registered but were refused (another model or block size)").register(registry);
  }

  private void bindWorker(WorkerClient w) {
    String id = w.workerId().value();
    io.micrometer.core.instrument.Tags tags =
        io.micrometer.core.instrument.Tags.of("worker", id, "role", w.description().role().cliName());
    java.util.List<io.micrometer.core.instrument.Meter> meters = new java.util.ArrayList<>();
    meters.add(Gauge.builder(MetricNames.WORKER_ACTIVE_REQUESTS, w, c -> c.lastLoadReport().activeRequests()).tags(tags).register(registry));
    meters.add(Gauge.builder(MetricNames.WORKER_WAITING_REQUESTS, w, c -> c.lastLoadReport().waitingRequests()).tags(tags).register(registry));
    meters.add(Gauge.builder(MetricNames.WORKER_QUEUED_PREFILL_TOKENS, w, c -> c.lastLoadReport().queuedPrefillTokens()).tags(tags).register(registry));
    meters.add(Gauge.builder(MetricNames.WORKER_KV_BLOCKS_USED, w, c -> c.lastLoadReport().kvBlocksUsed()).tags(tags).register(registry));
    meters.add(Gauge.builder(MetricNames.WORKER_KV_BLOCKS_TOTAL, w, c -> c.lastLoadReport().kvBlocksTotal()).tags(tags).register(registry));
    meters.add(Gauge.builder(MetricNames.WORKER_REACHABLE, w, c -> c.reachable() ? 1 : 0).tags(tags).register(registry));
    meters.add(Gauge.builder(MetricNames.WORKER_DRAINING, w, c -> c.draining() ? 1 : 0).tags(tags).register(registry));
    meters.add(Gauge.builder(MetricNames.WORKER_PREFILL_RATE, w, c -> c.lastLoadReport().prefillTokensPerSecond()).tags(tags).register(registry));
    router.kv().ifPresent(kv -> meters.add(Gauge.builder(MetricNames.WORKER_MISSING_EVENTS, kv,
            k -> k.workersWithoutEvents().contains(w.workerId()) ? 1 : 0)
        .tags(tags).register(registry)));
    var old = workerMeters.put(id, meters);
    if (old != null) {
      old.forEach(registry::remove);
    }
  }

  private void unbindWorker(WorkerClient w) {
    var meters = workerMeters.remove(w.workerId().value());
    if (meters != null) {
      meters.forEach(registry::remove);
    }
  }
}
