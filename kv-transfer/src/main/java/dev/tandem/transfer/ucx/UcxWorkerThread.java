package dev.tandem.transfer.ucx;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Supplier;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;

/**
 * One UCP context and worker, driven by one thread: every UCX call of an agent runs here (tasks
 * are queued and the worker is signalled), and completion callbacks run here too.
 *
 * <p>Ownership: owns the context and worker until {@link #close()}.
 */
final class UcxWorkerThread implements AutoCloseable {
  private final UcpContext context;
  private final UcpWorker worker;
  private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final Thread thread;
  private volatile boolean closed;
  /** Requests in flight: while any is, the loop polls instead of sleeping in waitForEvents. */
  final java.util.concurrent.atomic.AtomicInteger inFlight = new java.util.concurrent.atomic.AtomicInteger();

  UcxWorkerThread(String name) {
    this.context = new UcpContext(new UcpParams().requestRmaFeature().requestWakeupFeature());
    this.worker = context.newWorker(new UcpWorkerParams().requestWakeupRMA());
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

  /** Runs {@code task} on the worker thread. */
  void execute(Runnable task) {
    if (closed) {
      throw new IllegalStateException("the UCX agent is closed");
    }
    tasks.add(task);
    worker.signal();
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
    try {
      while (!closed) {
        Runnable task;
        boolean busy = false;
        while ((task = tasks.poll()) != null) {
          task.run();
          busy = true;
        }
        if (worker.progress() == 0 && !busy && tasks.isEmpty()) {
          if (inFlight.get() > 0) {
            Thread.onSpinWait();
          } else {
            worker.waitForEvents();
          }
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
      worker.close();
      context.close();
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    worker.signal();
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
