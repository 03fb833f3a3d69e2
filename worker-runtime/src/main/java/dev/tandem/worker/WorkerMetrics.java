package dev.tandem.worker;

import dev.tandem.common.WorkerId;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A worker's own meters: engine steps (time, outputs, batch size), queue depth, KV blocks, prefill
 * speed, and KV pulled from prefill workers. The figures are kept here and read by the meters when
 * scraped, so the same worker can be bound to several registries: its own (served on its metrics
 * port) and, in {@code tandem serve}, the frontend's.
 *
 * <p>Thread-safe: steps are counted on the engine loop; meters read from any thread.
 */
public final class WorkerMetrics implements EngineLoop.StepObserver {
  private final WorkerId workerId;
  private final EngineLoop loop;
  private final WorkerKvTransfer transfer; // null: no transfer agent
  private final LongAdder steps = new LongAdder();
  private final LongAdder stepNanos = new LongAdder();
  private final LongAdder outputs = new LongAdder();
  private final AtomicInteger lastBatch = new AtomicInteger();
  private final PrometheusMeterRegistry own = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

  WorkerMetrics(WorkerId workerId, EngineLoop loop, WorkerKvTransfer transfer) {
    this.workerId = workerId;
    this.loop = loop;
    this.transfer = transfer;
    loop.observeSteps(this);
    bindTo(own);
  }

  @Override
  public void step(long nanos, int outputCount) {
    steps.increment();
    stepNanos.add(nanos);
    outputs.add(outputCount);
    lastBatch.set(outputCount);
  }

  /** Registers this worker's meters on {@code registry}, tagged with its id. */
  public void bindTo(MeterRegistry registry) {
    String id = workerId.value();
    FunctionTimer.builder(MetricNames.ENGINE_STEP, this, m -> m.steps.sum(), m -> m.stepNanos.sum(), TimeUnit.NANOSECONDS)
        .description("engine steps and their time").tag("worker", id).register(registry);
    FunctionCounter.builder(MetricNames.ENGINE_STEP_OUTPUTS, this, m -> m.outputs.sum())
        .description("request outputs produced by engine steps").tag("worker", id).register(registry);
    Gauge.builder(MetricNames.ENGINE_BATCH_SIZE, lastBatch, AtomicInteger::get)
        .description("requests in the last engine step").tag("worker", id).register(registry);
    Gauge.builder(MetricNames.ENGINE_RUNNING, loop, l -> l.load().runningRequests()).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.ENGINE_WAITING, loop, l -> l.load().waitingRequests()).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.ENGINE_QUEUED_PREFILL_TOKENS, loop, l -> l.load().queuedPrefillTokens()).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.ENGINE_KV_BLOCKS_USED, loop, l -> l.load().kvBlocksUsed()).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.ENGINE_KV_BLOCKS_TOTAL, loop, l -> l.load().kvBlocksTotal()).tag("worker", id).register(registry);
    Gauge.builder(MetricNames.ENGINE_PREFILL_RATE, loop, l -> l.prefillCost().tokensPerSecond(512)).tag("worker", id).register(registry);
    FunctionCounter.builder(MetricNames.ENGINE_SPEC_DRAFT_TOKENS, loop, l -> l.speculationCounts().drafted())
        .description("tokens proposed by speculative decoding and verified").tag("worker", id).register(registry);
    FunctionCounter.builder(MetricNames.ENGINE_SPEC_ACCEPTED_TOKENS, loop, l -> l.speculationCounts().accepted())
        .description("proposed tokens kept").tag("worker", id).register(registry);
    if (transfer != null) {
      FunctionCounter.builder(MetricNames.KV_TRANSFER_BYTES, transfer, WorkerKvTransfer::pulledBytes)
          .description("KV bytes pulled from prefill workers").tag("worker", id).register(registry);
      FunctionTimer.builder(MetricNames.KV_TRANSFER, transfer, WorkerKvTransfer::pulls, WorkerKvTransfer::pullSeconds, TimeUnit.SECONDS)
          .description("KV pulls, first layer to last byte").tag("worker", id).register(registry);
    }
  }

  /** The Prometheus text of this worker's own registry. */
  public String scrape() {
    return own.scrape();
  }
}
