package dev.tandem.transfer.ucx;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * One UCP context and worker, driven by one thread: every UCX call of an agent runs here (tasks
 * are queued and the thread is woken), and completion callbacks run here too. While idle the
 * thread polls with sleeps of 20 µs–1 ms, and
 * without sleeping for 2 ms after any activity or a poke.
 *
 * <p>Ownership: owns the context and worker until {@link #close()}.
 */
final class UcxWorkerThread implements AutoCloseable {
  private final UcpContext context;
  private final UcpWorker worker;
  /** Idle sleeps grow from MIN to MAX: the worst added latency of a peer's first get. */
  private static final long MIN_IDLE_NANOS = 20_000;
  private static final long MAX_IDLE_NANOS = 1_000_000;
  /** How long the thread keeps polling after the last sign of activity. */
  private static final long HOT_NANOS = 2_000_000;
  /** Until when (System.nanoTime) the loop polls without sleeping: activity or a poke moves it. */
  private volatile long hotUntil;
  private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final Thread thread;
  private volatile boolean closed;
  /** Set when the native worker must outlive the agent: see {@link #abandon()}. */
  private volatile boolean keepNative;
  /** Requests in flight: while any is, the loop spins instead of sleeping. */
  final AtomicInteger inFlight = new AtomicInteger();

  UcxWorkerThread(String name) {
    this(name, java.util.Map.of());
  }

  /** With UCX settings ({@code NET_DEVICES} → {@code lo}: what {@code UCX_NET_DEVICES=lo} would set). */
  UcxWorkerThread(String name, java.util.Map<String, String> config) {
    UcpParams params = new UcpParams().requestRmaFeature();
    config.forEach(params::setConfig);
    this.context = new UcpContext(params);
    this.worker = context.newWorker(new UcpWorkerParams());
    this.thread = Thread.ofPlatform().name(name).daemon().start(this::loop);
  }

  UcpContext context() {
    return context;
  }

  UcpWorker worker() {
    return worker;
  }

  boolean onThread() {
    return Thread.currentThread() == thread;
  }

  /** Something will arrive soon (a peer is about to read): poll for a while instead of sleeping. */
  void poke() {
    hotUntil = System.nanoTime() + HOT_NANOS;
    LockSupport.unpark(thread);
  }

  /** Runs {@code task} on the worker thread. */
  void execute(Runnable task) {
    if (closed) {
      throw new IllegalStateException("the UCX agent is closed");
    }
    tasks.add(task);
    LockSupport.unpark(thread);
  }

  /** Runs {@code task} on the worker thread and waits for its result. */
  <T> T call(Supplier<T> task) {
    if (onThread()) {
      return task.get();
    }
    CompletableFuture<T> f = new CompletableFuture<>();
    execute(() -> {
      try {
        f.complete(task.get());
      } catch (Throwable t) {
        f.completeExceptionally(t);
      }
    });
    return f.join();
  }

  private void loop() {
    long idleNanos = MIN_IDLE_NANOS;
    try {
      while (!closed) {
        Runnable task;
        boolean busy = false;
        while ((task = tasks.poll()) != null) {
          task.run();
          busy = true;
        }
        if (worker.progress() != 0 || busy || !tasks.isEmpty()) {
          idleNanos = MIN_IDLE_NANOS;
          hotUntil = System.nanoTime() + HOT_NANOS;
        } else if (inFlight.get() > 0 || System.nanoTime() < hotUntil) {
          Thread.onSpinWait();
        } else {
          // Not waitForEvents: with UCX 1.13's shared-memory transports its event fd stays
          // readable, so it returns at once and the thread would spin. A peer's gets of our
          // registered memory need this worker to progress, so the sleep stays short, and a
          // reader pokes us (over the side channel) before it reads.
          LockSupport.parkNanos(idleNanos);
          idleNanos = Math.min(idleNanos * 2, MAX_IDLE_NANOS);
        }
      }
    } catch (Exception e) {
      closed = true;
      throw new IllegalStateException("UCX worker loop failed", e);
    } finally {
      Runnable task;
      while ((task = tasks.poll()) != null) {
        task.run(); // closing tasks
      }
      if (!keepNative) {
        worker.close();
        context.close();
      }
    }
  }

  /**
   * Stops the thread but leaves the native worker and context to the process's exit. For an agent
   * that talked to a peer over shared memory without UCX's peer-error handling: destroying the
   * worker then flushes endpoints whose peer may be gone, which UCX 1.13 cannot fail and may abort
   * on.
   */
  void abandon() {
    keepNative = true;
    close();
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    LockSupport.unpark(thread);
    if (onThread()) {
      return; // the loop ends after this task
    }
    try {
      thread.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
