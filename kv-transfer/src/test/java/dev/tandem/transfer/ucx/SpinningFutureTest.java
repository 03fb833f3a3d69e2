package dev.tandem.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** A read's future: the same answers as a plain future's, whether the caller spins or parks. */
class SpinningFutureTest {
  @Test
  void aValueCompletedWhileTheCallerSpinsIsReturned() throws Exception {
    SpinningFuture<String> f = new SpinningFuture<>(1_000_000_000L);
    Thread.ofPlatform().start(() -> f.complete("done"));
    assertEquals("done", f.get());
  }

  @Test
  void aValueCompletedAfterTheSpinIsReturnedToTheParkedCaller() throws Exception {
    SpinningFuture<String> f = new SpinningFuture<>(1_000);
    Thread.ofPlatform().start(() -> {
      sleep(50);
      f.complete("late");
    });
    assertEquals("late", f.join());
  }

  @Test
  void failuresReachEveryKindOfWaitAsWithAPlainFuture() {
    SpinningFuture<Void> f = new SpinningFuture<>(100_000);
    IOException gone = new IOException("the peer went away");
    f.completeExceptionally(gone);
    assertSame(gone, assertThrows(ExecutionException.class, f::get).getCause());
    assertSame(gone, assertThrows(ExecutionException.class, () -> f.get(1, TimeUnit.SECONDS)).getCause());
    assertSame(gone, assertThrows(CompletionException.class, f::join).getCause());
  }

  @Test
  void aTimeoutShorterThanTheSpinEndsTheWaitAtTheTimeout() {
    SpinningFuture<Void> f = new SpinningFuture<>(10_000_000_000L); // would spin 10 s
    long start = System.nanoTime();
    assertThrows(TimeoutException.class, () -> f.get(20, TimeUnit.MILLISECONDS));
    long waitedMs = (System.nanoTime() - start) / 1_000_000;
    assertTrue(waitedMs >= 20 && waitedMs < 5_000, "waited " + waitedMs + " ms for a 20 ms timeout");
    assertFalse(f.isDone());
  }

  @Test
  void dependentsArePlainFutures() {
    SpinningFuture<Integer> f = new SpinningFuture<>(100_000);
    CompletableFuture<Integer> next = f.thenApply(v -> v + 1);
    assertEquals(CompletableFuture.class, next.getClass());
    f.complete(1);
    assertEquals(2, next.join());
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
