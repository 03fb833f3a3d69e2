package dev.tandem.planner.live;

import dev.tandem.planner.Decision;
import dev.tandem.planner.IntervalStats;
import dev.tandem.planner.MetricNames;
import dev.tandem.planner.Pool;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/** Every decision's inputs and outcome as {@code tandem_planner_*} meters. */
public final class PlannerMetrics {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final AtomicReference<Decision> last = new AtomicReference<>();
  private final AtomicReference<IntervalStats> lastStats = new AtomicReference<>();
  private final Map<Pool, Counter> failures = new EnumMap<>(Pool.class);
  private final Counter scrapeFailures;

  public PlannerMetrics() {
    gauge(MetricNames.PREDICTED_REQUEST_RATE, "requests per second the pools are sized for", d -> d.forecast().requestRate());
    gauge(MetricNames.PREDICTED_ISL, "forecast mean prompt tokens", d -> d.forecast().isl());
    gauge(MetricNames.PREDICTED_OSL, "forecast mean output tokens", d -> d.forecast().osl());
    gauge(MetricNames.PREDICTED_HIT_RATE, "forecast fraction of prompt tokens from cache", d -> d.forecast().prefixHitRate());
    Gauge.builder(MetricNames.OBSERVED_REQUEST_RATE, lastStats, s -> s.get() == null ? 0 : s.get().requestRate())
        .description("requests per second measured over the last interval").register(registry);
    for (Pool p : Pool.values()) {
      Gauge.builder(MetricNames.DESIRED_REPLICAS, last, d -> d.get() == null ? 0 : d.get().replicas(p))
          .tag("pool", p.cliName()).description("replicas the last decision wants").register(registry);
      Gauge.builder(MetricNames.ACTUAL_REPLICAS, lastStats, s -> s.get() == null ? 0 : s.get().pool(p).ready())
          .tag("pool", p.cliName()).description("workers serving, as the routers see them").register(registry);
      Gauge.builder(MetricNames.STARTING_REPLICAS, lastStats, s -> s.get() == null ? 0 : s.get().pool(p).starting())
          .tag("pool", p.cliName()).description("workers asked for and not serving yet").register(registry);
      Gauge.builder(MetricNames.CORRECTION, last, d -> d.get() == null ? 1
              : p == Pool.PREFILL ? d.get().prefillCorrection() : d.get().decodeCorrection())
          .tag("pool", p.cliName()).description("SLA mode's observed ÷ expected latency").register(registry);
      failures.put(p, Counter.builder(MetricNames.CONNECTOR_FAILURES).tag("pool", p.cliName())
          .description("scaling actions the connector failed (retried with backoff)").register(registry));
    }
    scrapeFailures = Counter.builder(MetricNames.SCRAPE_FAILURES).description("failed scrapes of the frontends' metrics").register(registry);
  }

  private void gauge(String name, String description, java.util.function.ToDoubleFunction<Decision> f) {
    Gauge.builder(name, last, d -> d.get() == null ? 0 : f.applyAsDouble(d.get())).description(description).register(registry);
  }

  public void decided(IntervalStats stats, Decision d) {
    lastStats.set(stats);
    last.set(d);
    for (Pool p : Pool.values()) {
      int before = p == Pool.PREFILL ? d.prefillBefore() : d.decodeBefore();
      int after = d.replicas(p);
      String direction = after > before ? "up" : after < before ? "down" : "hold";
      Counter.builder(MetricNames.DECISIONS).tag("pool", p.cliName()).tag("direction", direction)
          .description("planner decisions").register(registry).increment();
    }
  }

  public void connectorFailed(Pool pool) {
    failures.get(pool).increment();
  }

  public void scrapeFailed() {
    scrapeFailures.increment();
  }

  public String scrape() {
    return registry.scrape();
  }
}
