package dev.tandem.frontend;

import dev.tandem.router.grpc.KvRouting;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerClient;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** The frontend's meters on a Prometheus registry. Thread-safe. */
public final class FrontendMetrics {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final AtomicInteger inflight = new AtomicInteger();
  private final Timer ttft;
  private final Timer itl;
  private final Timer duration;
  private final Counter inputTokens;
  private final Counter cachedTokens;
  private final Counter outputTokens;
  private final Counter disconnects;
  private final Counter predictedOverlap;
  private final Counter remotePrefillFallbacks;
  private final Set<String> watchedWorkers = ConcurrentHashMap.newKeySet();

  public FrontendMetrics() {
    Gauge.builder(MetricNames.INFLIGHT_REQUESTS, inflight, AtomicInteger::get)
        .description("HTTP generation requests in flight")
        .register(registry);
    ttft = latency(MetricNames.TIME_TO_FIRST_TOKEN, "time from request arrival to the first token sent");
    itl = latency(MetricNames.INTER_TOKEN_LATENCY, "time between successive token chunks of a sequence");
    duration = latency(MetricNames.REQUEST_DURATION, "time from request arrival to its last byte");
    remotePrefillFallbacks =
        Counter.builder(MetricNames.REMOTE_PREFILL_FALLBACKS)
            .description("requests sent for remote prefill that their decode worker prefilled itself")
            .register(registry);
    inputTokens = Counter.builder(MetricNames.INPUT_TOKENS).description("prompt tokens").register(registry);
    cachedTokens =
        Counter.builder(MetricNames.CACHED_TOKENS).description("prompt tokens found in a worker's KV cache").register(registry);
    outputTokens = Counter.builder(MetricNames.OUTPUT_TOKENS).description("generated tokens").register(registry);
    disconnects =
        Counter.builder(MetricNames.CLIENT_DISCONNECTS).description("requests cancelled by a client going away").register(registry);
    predictedOverlap =
        Counter.builder(MetricNames.ROUTER_PREDICTED_OVERLAP).description("prompt tokens the router expected the chosen worker to hold").register(registry);
    Gauge.builder(MetricNames.ROUTER_KV_HIT_RATE, this, m -> m.inputTokens.count() == 0 ? 0 : m.cachedTokens.count() / m.inputTokens.count())
        .description("prompt tokens served from a worker's prefix cache, as a fraction of all prompt tokens")
        .register(registry);
  }

  private Timer latency(String name, String description) {
    return Timer.builder(name)
        .description(description)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofNanos(100_000))
        .maximumExpectedValue(Duration.ofSeconds(120))
        .register(registry);
  }

  /** Publishes the router's KV index state and each worker's load, now and for workers that join later. */
  public void watchRouter(Router router) {
    router.kv().ifPresent(kv -> {
      FunctionCounter.builder(MetricNames.ROUTER_EVENTS_APPLIED, kv, k -> k.index().eventsApplied()).register(registry);
      FunctionCounter.builder(MetricNames.ROUTER_UNKNOWN_PARENTS, kv, k -> k.index().unknownParents()).register(registry);
      FunctionCounter.builder(MetricNames.ROUTER_UNKNOWN_REMOVALS, kv, k -> k.index().unknownRemovals()).register(registry);
      FunctionCounter.builder(MetricNames.ROUTER_EVENT_GAPS, kv, KvRouting::eventGaps).register(registry);
      FunctionCounter.builder(MetricNames.ROUTER_SNAPSHOTS, kv, KvRouting::eventSnapshots).register(registry);
      Gauge.builder(MetricNames.ROUTER_INDEX_BLOCKS, kv, k -> k.index().blockCount()).register(registry);
    });
    var disagg = router.disaggregation();
    String decisions = "requests a prefill worker could have taken, by whether the router split them";
    FunctionCounter.builder(MetricNames.ROUTER_DISAGG_DECISIONS, disagg, d -> d.splits())
        .description(decisions).tag("decision", "split").register(registry);
    FunctionCounter.builder(MetricNames.ROUTER_DISAGG_DECISIONS, disagg, d -> d.keptLocal())
        .description(decisions).tag("decision", "local").register(registry);
    router.pool().onJoin(w -> watchWorker(router, w));
  }

  /** A decode worker prefilled a request itself because its remote prefill failed. */
  public void remotePrefillFallback() {
    remotePrefillFallbacks.increment();
  }

  private void watchWorker(Router router, WorkerClient w) {
    String id = w.workerId().value();
    if (watchedWorkers.add(id)) {
      Gauge.builder(MetricNames.WORKER_ACTIVE_REQUESTS, w, c -> c.lastLoadReport().getActiveRequests())
          .tag("worker", id).register(registry);
      Gauge.builder(MetricNames.WORKER_KV_BLOCKS_USED, w, c -> c.lastLoadReport().getKvBlocksUsed())
          .tag("worker", id).register(registry);
      Gauge.builder(MetricNames.WORKER_KV_BLOCKS_TOTAL, w, c -> c.lastLoadReport().getKvBlocksTotal())
          .tag("worker", id).register(registry);
      Gauge.builder(MetricNames.WORKER_REACHABLE, w, c -> c.reachable() ? 1 : 0)
          .tag("worker", id).register(registry);
      Gauge.builder(MetricNames.WORKER_PREFILL_RATE, w, c -> c.lastLoadReport().getPrefillTokensPerS())
          .tag("worker", id).register(registry);
      router.kv().ifPresent(kv -> Gauge.builder(MetricNames.ROUTER_WORKER_MISSING_EVENTS, kv,
              k -> k.workersWithoutEvents().contains(w.workerId()) ? 1 : 0)
          .tag("worker", id).register(registry));
    }
  }

  public void predictedOverlap(long tokens) {
    predictedOverlap.increment(tokens);
  }

  public void requestFinished(String endpoint, int status) {
    registry.counter(MetricNames.REQUESTS, "endpoint", endpoint, "status", Integer.toString(status)).increment();
  }

  public void inflightChange(int delta) {
    inflight.addAndGet(delta);
  }

  public void ttft(long nanos) {
    ttft.record(Duration.ofNanos(nanos));
  }

  public void itl(long nanos) {
    itl.record(Duration.ofNanos(nanos));
  }

  public void duration(long nanos) {
    duration.record(Duration.ofNanos(nanos));
  }

  public void tokens(long input, long cached, long output) {
    inputTokens.increment(input);
    cachedTokens.increment(cached);
    outputTokens.increment(output);
  }

  public void disconnect() {
    disconnects.increment();
  }

  /** The Prometheus text exposition. */
  public String scrape() {
    return registry.scrape();
  }
}
