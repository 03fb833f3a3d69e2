package dev.tandem.router.grpc;

import dev.tandem.common.KvEvent;
import dev.tandem.common.WorkerId;
import dev.tandem.wire.FromWire;
import dev.tandem.proto.worker.v1.KvEventBatch;
import dev.tandem.proto.worker.v1.KvEventsRequest;
import dev.tandem.router.KvEventSequencer;
import io.grpc.Context;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker's KV event stream into the router: subscribes from the last applied event id, hands
 * events to the index in order, and on a gap or a broken stream subscribes again from the last id —
 * the worker then replays the missing range from its ring, or sends a snapshot when it no longer
 * has it (and after a restart, when ids start over).
 *
 * <p>Threading: callbacks of one stream arrive one at a time; resubscription runs on the timer.
 */
final class KvEventSubscription implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(KvEventSubscription.class);

  private final WorkerClient worker;
  private final ScheduledExecutorService timer;
  private final Consumer<WorkerId> reset;
  private final BiConsumer<WorkerId, List<KvEvent>> apply;
  private final KvEventSequencer sequencer = new KvEventSequencer();
  private volatile Context.CancellableContext current;
  private volatile boolean closed;
  private long gaps;
  private long snapshots;

  KvEventSubscription(
      WorkerClient worker,
      ScheduledExecutorService timer,
      Consumer<WorkerId> reset,
      BiConsumer<WorkerId, List<KvEvent>> apply) {
    this.worker = worker;
    this.timer = timer;
    this.reset = reset;
    this.apply = apply;
  }

  synchronized void start() {
    if (closed) {
      return;
    }
    Context.CancellableContext ctx = Context.current().withCancellation();
    current = ctx;
    long after = sequencer.lastEventId();
    ctx.run(
        () ->
            worker.kvEvents(
                KvEventsRequest.newBuilder().setAfterEventId(after).build(),
                new StreamObserver<>() {
                  @Override
                  public void onNext(KvEventBatch batch) {
                    onBatch(ctx, batch);
                  }

                  @Override
                  public void onError(Throwable t) {
                    if (!closed && !ctx.isCancelled()) {
                      log.debug("KV event stream of {} broke: {}", worker.workerId(), t.toString());
                      retryLater();
                    }
                  }

                  @Override
                  public void onCompleted() {
                    onError(new IllegalStateException("stream ended"));
                  }
                }));
  }

  private void onBatch(Context.CancellableContext ctx, KvEventBatch batch) {
    if (ctx.isCancelled()) {
      return;
    }
    List<KvEvent> events = new ArrayList<>(batch.getEventsCount());
    for (var e : batch.getEventsList()) {
      events.add(FromWire.kvEvent(e));
    }
    KvEventSequencer.Decision d;
    synchronized (this) {
      d = sequencer.accept(events, batch.getSnapshot());
      if (d.reset()) {
        snapshots++;
      }
      if (d.gap()) {
        gaps++;
      }
    }
    WorkerId id = worker.workerId();
    if (d.reset()) {
      reset.accept(id);
    }
    if (!d.apply().isEmpty()) {
      apply.accept(id, d.apply());
    }
    if (d.gap()) {
      log.info("gap in the KV events of {} after event {}; asking for a replay", id, sequencer.lastEventId());
      ctx.cancel(null);
      timer.execute(this::start);
    }
  }

  private void retryLater() {
    timer.schedule(this::start, 1, TimeUnit.SECONDS);
  }

  synchronized long lastEventId() {
    return sequencer.lastEventId();
  }

  synchronized long gaps() {
    return gaps;
  }

  synchronized long snapshots() {
    return snapshots;
  }

  @Override
  public void close() {
    closed = true;
    Context.CancellableContext ctx = current;
    if (ctx != null) {
      ctx.cancel(null);
    }
  }
}
