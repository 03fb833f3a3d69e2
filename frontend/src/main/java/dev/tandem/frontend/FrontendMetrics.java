package dev.tandem.frontend;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The frontend's meters on a Prometheus registry, which {@code /metrics} scrapes. Other components
 * in the same process (the router) bind their own meters to {@link #registry()}. Thread-safe.
 */
public final class FrontendMetrics {
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final AtomicInteger inflight = new AtomicInteger();
  private final AtomicInteger waiting = new AtomicInteger();
  private final Timer ttft;
  private final Timer itl;
  private final Timer duration;
  private final Counter inputTokens;
  private final Counter cachedTokens;
  private final Counter outputTokens;
  private final DistributionSummary uncachedPrompt;
  private final Counter disconnects;
  private final Counter remotePrefillFallbacks;
  private final Counter migrations;

  public FrontendMetrics() {
    Gauge.builder(MetricNames.INFLIGHT_REQUESTS, inflight, AtomicInteger::get)
        .description("HTTP generation requests in flight")
        .register(registry);
    Gauge.builder(MetricNames.WAITING_REQUESTS, waiting, AtomicInteger::get)
        .description("requests waiting for a worker to serve (none serves now: a pool scaled to zero or starting)")
        .register(registry);
    ttft = latency(MetricNames.TIME_TO_FIRST_TOKEN, "time from request arrival to the first token sent");
    itl = latency(MetricNames.INTER_TOKEN_LATENCY, "time between successive token chunks of a sequence");
    duration = latency(MetricNames.REQUEST_DURATION, "time from request arrival to its last byte");
    remotePrefillFallbacks =
        Counter.builder(MetricNames.REMOTE_PREFILL_FALLBACKS)
            .description("requests sent for remote prefill that their decode worker prefilled itself")
            .register(registry);
    migrations =
        Counter.builder(MetricNames.MIGRATIONS)
            .description("Choices moved to another worker (prompt plus the tokens so far) after theirs failed mid-stream")
            .register(registry);
    inputTokens = Counter.builder(MetricNames.INPUT_TOKENS).description("prompt tokens").register(registry);
    cachedTokens =
        Counter.builder(MetricNames.CACHED_TOKENS).description("prompt tokens found in a worker's KV cache").register(registry);
    outputTokens = Counter.builder(MetricNames.OUTPUT_TOKENS).description("generated tokens").register(registry);
    uncachedPrompt = DistributionSummary.builder(MetricNames.UNCACHED_PROMPT_TOKENS).baseUnit("tokens")
        .description("prompt tokens a request had to compute (prompt minus cached)")
        .serviceLevelObjectives(dev.tandem.common.PromptLengthBuckets.bounds())
        .register(registry);
    disconnects =
        Counter.builder(MetricNames.CLIENT_DISCONNECTS).description("requests cancelled by a client going away").register(registry);
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

  /** The registry {@code /metrics} shows; the router binds its meters here too. */
  public MeterRegistry registry() {
    return registry;
  }

  /** A decode worker prefilled a request itself because its remote prefill failed. */
  public void remotePrefillFallback() {
    remotePrefillFallbacks.increment();
  }

  /** A choice continued on another worker after its worker failed. */
  public void migration() {
    migrations.increment();
  }

  public long migrations() {
    return (long) migrations.count();
  }

  /** A request that was counted in flight ended after {@code nanos}, through {@code endpoint}, with {@code status}. */
  public void runEnded(String endpoint, int status, long nanos) {
    inflightChange(-1);
    duration(nanos);
    requestFinished(endpoint, status);
  }

  public void requestFinished(String endpoint, int status) {
    registry.counter(MetricNames.REQUESTS, "endpoint", endpoint, "status", Integer.toString(status)).increment();
  }

  /** A generation request named LoRA adapter {@code adapter} (one the deployment serves: the tag's values are bounded). */
  public void loraRequest(String adapter) {
    registry.counter(MetricNames.LORA_REQUESTS, "adapter", adapter).increment();
  }

  /** Requests accepted and not yet answered in full. */
  public int inflight() {
    return inflight.get();
  }

  /** Requests waiting for any worker to serve. */
  public int waiting() {
    return waiting.get();
  }

  public void waitingChange(int delta) {
    waiting.addAndGet(delta);
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

  /** A request finished with {@code input} prompt tokens, {@code cached} of them from cache, and {@code output} generated. */
  public void tokens(long input, long cached, long output) {
    uncachedPrompt.record(Math.max(0, input - cached));
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
