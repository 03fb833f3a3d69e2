package dev.tandem.engine.compute;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Splits index ranges over {@code threads} threads: the caller and {@code threads - 1} helpers.
 * A forward pass issues hundreds of short parallel kernels; waking a parked thread for each costs
 * tens of microseconds on a busy machine, so helpers spin briefly after each job before they park
 * (as llama.cpp's thread pool does). Chunks are claimed dynamically, so a slow thread delays only
 * its own chunk.
 *
 * <p>Threading: {@link #forRange} is called from one thread at a time. Ownership: owns its helper
 * threads until {@link #close()}.
 */
final class ParallelRunner implements AutoCloseable {
  /** Processes indices {@code [from, to)}. */
  @FunctionalInterface
  interface RangeBody {
    void run(int from, int to);
  }

  /** How long an idle helper spins before parking. */
  private static final long SPIN_NANOS = 300_000;

  private final int threads;
  private final Thread[] helpers;
  private final AtomicLong generation = new AtomicLong();
  private volatile Job job;
  private volatile boolean closed;

  ParallelRunner(int threads) {
    this.threads = threads <= 0 ? Runtime.getRuntime().availableProcessors() : threads;
    this.helpers = new Thread[this.threads - 1];
    for (int i = 0; i < helpers.length; i++) {
      helpers[i] = Thread.ofPlatform().name("compute-" + (i + 1)).daemon().start(this::helperLoop);
    }
  }

  int threads() {
    return threads;
  }

  /** Runs {@code body} over [0, n) in chunks of at least {@code grain} indices; returns when done. */
  void forRange(int n, int grain, RangeBody body) {
    int chunks = Math.max(1, Math.min(threads * 4, n / Math.max(1, grain)));
    if (chunks == 1 || threads == 1) {
      body.run(0, n);
      return;
    }
    Job j = new Job(body, n, chunks);
    job = j;
    generation.incrementAndGet();
    for (Thread h : helpers) {
      LockSupport.unpark(h);
    }
    j.runChunks();
    while (j.done.get() < chunks) {
      Thread.onSpinWait();
    }
    if (j.failure != null) {
      throw new IllegalStateException("compute kernel failed", j.failure);
    }
  }

  private void helperLoop() {
    long seen = generation.get();
    while (!closed) {
      long g = generation.get();
      if (g != seen) {
        seen = g;
        Job j = job;
        if (j != null) {
          j.runChunks();
        }
        continue;
      }
      long spinUntil = System.nanoTime() + SPIN_NANOS;
      while (generation.get() == seen && !closed && System.nanoTime() < spinUntil) {
        Thread.onSpinWait();
      }
      if (generation.get() == seen && !closed) {
        LockSupport.parkNanos(this, 100_000_000L);
      }
    }
  }

  private static final class Job {
    private final RangeBody body;
    private final int n;
    private final int chunks;
    private final AtomicInteger next = new AtomicInteger();
    private final AtomicInteger done = new AtomicInteger();
    private volatile Throwable failure;

    Job(RangeBody body, int n, int chunks) {
      this.body = body;
      this.n = n;
      this.chunks = chunks;
    }

    void runChunks() {
      for (int c; (c = next.getAndIncrement()) < chunks; ) {
        try {
          body.run((int) ((long) n * c / chunks), (int) ((long) n * (c + 1) / chunks));
        } catch (Throwable t) {
          failure = t;
        } finally {
          done.incrementAndGet();
        }
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    for (Thread h : helpers) {
      LockSupport.unpark(h);
    }
  }
}
