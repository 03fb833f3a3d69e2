package dev.tandem.engine.sched;

import dev.tandem.common.KvEvent;
import dev.tandem.engine.Engine;
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

  @Override
  public void setEventSink(KvEventSink sink) {
    scheduler.pool().setEventSink(sink);
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
    return batch.size() == 0 ? List.of() : run(batch);
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
