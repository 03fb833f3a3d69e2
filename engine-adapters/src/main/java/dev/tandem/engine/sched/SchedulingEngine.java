package dev.tandem.engine.sched;

import dev.tandem.common.PrefillCost;
import dev.tandem.common.KvEvent;
import dev.tandem.engine.Engine;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.KvEventSink;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.kv.BlockPool;
import java.util.List;

/**
 * An engine built on the shared {@link Scheduler}: everything but the compute of a step is the
 * scheduler's. Subclasses run a {@link ScheduledBatch} and hand the scheduler the token each
 * caught-up sequence draws ({@link Scheduler#complete}).
 *
 * <p>Threading: owned by one thread (see {@link Engine}).
 */
public abstract class SchedulingEngine implements Engine {
  protected final Scheduler scheduler;
  private volatile EngineInfo withPriority; // described(info), once it schedules by priority
  private final PrefillCostFit prefillFit = new PrefillCostFit();

  protected SchedulingEngine(Scheduler scheduler) {
    this.scheduler = scheduler;
  }

  /** The block pool, for tests that assert it returns to full. */
  public BlockPool pool() {
    return scheduler.pool();
  }

  /** Sequences preempted by recompute so far. */
  public long preemptions() {
    return scheduler.preemptions();
  }

  /**
   * Schedules by each request's priority from now on ({@link Scheduler#orderByPriority}); the
   * engine then says it honours {@code priority}. Call before serving.
   */
  public void scheduleByPriority() {
    scheduler.orderByPriority();
  }

  /** {@code base} (the engine's fixed description), with {@code priority} among its features where this engine schedules by it. */
  protected EngineInfo described(EngineInfo base) {
    if (!scheduler.ordersByPriority()) {
      return base;
    }
    EngineInfo d = withPriority;
    if (d == null) {
      d = base.withFeature(EngineInfo.Feature.PRIORITY);
      withPriority = d;
    }
    return d;
  }

  @Override
  public void setEventSink(KvEventSink sink) {
    scheduler.pool().setEventSink(sink);
  }

  @Override
  public dev.tandem.engine.SpeculationCounts speculationCounts() {
    return scheduler.speculationCounts();
  }

  @Override
  public boolean abort(String requestId) {
    return scheduler.abort(requestId);
  }

  @Override
  public boolean hasWork() {
    return scheduler.hasWork();
  }

  @Override
  public final List<RequestOutput> step() {
    ScheduledBatch batch = scheduler.schedule();
    if (batch.size() == 0) {
      return List.of();
    }
    int prefillTokens = 0;
    int totalTokens = 0;
    double prefillContext = 0; // earlier tokens attended to, summed over the prefill tokens
    for (int i = 0; i < batch.size(); i++) {
      Sequence seq = batch.sequence(i);
      int n = batch.tokens()[i];
      totalTokens += n;
      if (seq.computedTokens() < seq.promptLength()) {
        prefillTokens += n;
        prefillContext += attention().attended(seq.computedTokens(), n);
      }
    }
    long started = System.nanoTime();
    List<RequestOutput> outputs = run(batch);
    prefillFit.step(prefillTokens, totalTokens, prefillContext, (System.nanoTime() - started) / 1e9);
    return outputs;
  }

  /** How far back the model's layers attend (its sliding window and the share of layers that slide). */
  protected PrefillCost.Attention attention() {
    return PrefillCost.Attention.FULL;
  }

  /** The prefill cost fitted over this engine's recent prefill steps (their wall time), with the model's attention. */
  @Override
  public PrefillCost prefillCost() {
    return prefillFit.cost().withAttention(attention());
  }

  /** Forgets the prefill steps measured so far (a warm-up's first, not yet compiled, round). */
  protected void resetPrefillCost() {
    prefillFit.reset();
  }

  /** Computes one scheduled batch and completes it through the scheduler. */
  protected abstract List<RequestOutput> run(ScheduledBatch batch);

  @Override
  public EngineLoad load() {
    return scheduler.load();
  }

  @Override
  public List<KvEvent> cacheSnapshot() {
    return scheduler.pool().snapshot();
  }
}
