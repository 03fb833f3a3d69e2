package dev.tandem.frontend.http;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Where a generation request's body is parsed, its chat template rendered and its prompt
 * tokenized: off the Netty event loops, so that one long prompt does not hold up every other
 * connection on its loop (`/live`, small requests, streaming tokens). A bounded pool with a
 * bounded queue; past both, a request is refused with 503 rather than queued without end.
 *
 * <p>Owned by the {@link FrontendServer}; {@link #close} stops its threads. Thread-safe.
 */
final class PromptPreparation implements Executor, AutoCloseable {
  /** Requests waiting for a preparation thread before new ones are refused. */
  static final int QUEUE = 1024;

  /** Runs every task on the calling thread (tests on an EmbeddedChannel). */
  static final Executor DIRECT = Runnable::run;

  private final ThreadPoolExecutor pool;

  PromptPreparation(int threads, int queue) {
    AtomicInteger n = new AtomicInteger();
    this.pool = new ThreadPoolExecutor(threads, threads, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(queue), r -> {
      Thread t = new Thread(r, "tandem-prepare-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /** One thread per two cores, at least two. */
  static PromptPreparation forThisMachine() {
    return new PromptPreparation(Math.max(2, Runtime.getRuntime().availableProcessors() / 2), QUEUE);
  }

  /**
   * @throws ApiException 503 when every thread is busy and the queue is full
   */
  @Override
  public void execute(Runnable task) {
    try {
      pool.execute(task);
    } catch (RejectedExecutionException e) {
      throw new ApiException(503, "The server is busy preparing other prompts; retry shortly.", "service_unavailable", null,
          "server_busy");
    }
  }

  @Override
  public void close() {
    pool.shutdownNow();
  }
}
