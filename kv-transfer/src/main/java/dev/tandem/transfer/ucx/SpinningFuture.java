package dev.tandem.transfer.ucx;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The future a UCX read returns. A caller blocked in {@link #get()}, {@link #get(long, TimeUnit)}
 * or {@link #join()} spins for up to {@code spinNanos} before it parks: a 1 MiB read over shared
 * memory takes ~50 µs, and waking a parked thread costs ~35 µs on a small VM, so a parked caller
 * paid nearly as much to learn that its read had ended as the read itself. Reads that last longer
 * than the spin park as any future's callers do, having spun a small share of their time.
 * Dependents ({@code thenApply}, {@code whenCompleteAsync}, ...) are plain futures.
 *
 * <p>Threading: as {@link CompletableFuture}; completed on the agent's worker thread.
 */
final class SpinningFuture<T> extends CompletableFuture<T> {
  /** How long a blocked caller spins: a few wake-ups' worth, so that spinning never costs more than parking saves. */
  static final long SPIN_NANOS = 100_000;

  private final long spinNanos;

  /** {@link #SPIN_NANOS}, or no spinning on a single CPU, where it would only hold off the thread that completes the read. */
  SpinningFuture() {
    this(Runtime.getRuntime().availableProcessors() > 1 ? SPIN_NANOS : 0);
  }

  SpinningFuture(long spinNanos) {
    this.spinNanos = spinNanos;
  }

  @Override
  public T get() throws InterruptedException, ExecutionException {
    spin(spinNanos);
    return super.get();
  }

  @Override
  public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
    long limit = unit.toNanos(timeout);
    long spun = spin(Math.min(spinNanos, limit));
    return super.get(Math.max(0, limit - spun), TimeUnit.NANOSECONDS);
  }

  @Override
  public T join() {
    spin(spinNanos);
    return super.join();
  }

  @Override
  public <U> CompletableFuture<U> newIncompleteFuture() {
    return new CompletableFuture<>();
  }

  /** Spins until done or {@code nanos} have passed; returns the nanoseconds spent. */
  private long spin(long nanos) {
    if (nanos <= 0 || isDone()) {
      return 0;
    }
    long start = System.nanoTime();
    long now = start;
    while (!isDone() && now - start < nanos) {
      Thread.onSpinWait();
      now = System.nanoTime();
    }
    return now - start;
  }
}
