package dev.tandem.engine.compute;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveAction;

/**
 * Splits index ranges over a fixed pool of threads. The calling thread takes part, so a range of
 * one chunk runs without a hand-off.
 *
 * <p>Ownership: owns its threads until {@link #close()}.
 */
final class ParallelRunner implements AutoCloseable {
  /** Processes indices {@code [from, to)}. */
  @FunctionalInterface
  interface RangeBody {
    void run(int from, int to);
  }

  private final ForkJoinPool pool;
  private final int threads;

  ParallelRunner(int threads) {
    this.threads = threads <= 0 ? Runtime.getRuntime().availableProcessors() : threads;
    this.pool = new ForkJoinPool(this.threads);
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
    pool.invoke(new Chunk(body, n, chunks, 0, chunks));
  }

  private static final class Chunk extends RecursiveAction {
    private final RangeBody body;
    private final int n;
    private final int chunks;
    private final int lo;
    private final int hi;

    Chunk(RangeBody body, int n, int chunks, int lo, int hi) {
      this.body = body;
      this.n = n;
      this.chunks = chunks;
      this.lo = lo;
      this.hi = hi;
    }

    @Override
    protected void compute() {
      if (hi - lo == 1) {
        body.run((int) ((long) n * lo / chunks), (int) ((long) n * hi / chunks));
        return;
      }
      int mid = (lo + hi) >>> 1;
      invokeAll(new Chunk(body, n, chunks, lo, mid), new Chunk(body, n, chunks, mid, hi));
    }
  }

  @Override
  public void close() {
    pool.shutdownNow();
  }
}
