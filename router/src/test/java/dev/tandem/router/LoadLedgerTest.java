package dev.tandem.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerId;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class LoadLedgerTest {
  private static final WorkerId A = new WorkerId("a");
  private static final WorkerId P = new WorkerId("p");

  @Test
  void aReservationCountsUntilItsFirstTokenAndItsEnd() {
    LoadLedger ledger = new LoadLedger();
    LoadLedger.Reservation r = ledger.reserve(A, 3, 5);
    assertEquals(new LoadLedger.Routed(1, 3, 5), ledger.routed(A));
    assertEquals(1, ledger.open());
    r.firstToken();
    assertEquals(new LoadLedger.Routed(1, 0, 5), ledger.routed(A), "prefill blocks end with the first token");
    r.release();
    assertEquals(LoadLedger.Routed.NONE, ledger.routed(A));
    assertEquals(0, ledger.open());
    assertTrue(r.released());
  }

  @Test
  void releaseIsIdempotentOnEveryPath() {
    LoadLedger ledger = new LoadLedger();
    // Finish then cancel (a cancel racing the last chunk), error then completion, never started.
    LoadLedger.Reservation finished = ledger.reserve(A, 2, 4);
    finished.firstToken();
    finished.release();
    finished.release();
    finished.firstToken();
    LoadLedger.Reservation failed = ledger.reserve(A, 2, 4);
    failed.release();
    failed.firstToken();
    failed.release();
    LoadLedger.Reservation neverStarted = ledger.reserve(A, 7, 9);
    neverStarted.release();
    assertEquals(LoadLedger.Routed.NONE, ledger.routed(A));
    assertEquals(0, ledger.open());
  }

  @Test
  void aSplitRequestChargesThePrefillWorkerUntilTheFirstTokenAndTheDecodeWorkerUntilTheEnd() {
    LoadLedger ledger = new LoadLedger();
    LoadLedger.Reservation r = ledger.reserveSplit(A, 6, P, 4);
    assertEquals(new LoadLedger.Routed(1, 0, 6), ledger.routed(A), "the decode worker only holds the blocks");
    assertEquals(new LoadLedger.Routed(1, 4, 0), ledger.routed(P), "the prefill worker computes the uncached ones");
    r.firstToken();
    assertEquals(LoadLedger.Routed.NONE, ledger.routed(P));
    assertEquals(new LoadLedger.Routed(1, 0, 6), ledger.routed(A));
    r.release();
    assertEquals(LoadLedger.Routed.NONE, ledger.routed(A));
    assertEquals(0, ledger.open());
  }

  @Test
  void aSplitRequestThatFailsBeforeItsFirstTokenFreesBothWorkers() {
    LoadLedger ledger = new LoadLedger();
    LoadLedger.Reservation r = ledger.reserveSplit(A, 6, P, 4);
    r.release();
    r.release();
    assertEquals(LoadLedger.Routed.NONE, ledger.routed(A));
    assertEquals(LoadLedger.Routed.NONE, ledger.routed(P));
    assertFalse(ledger.open() != 0);
  }

  @Test
  void concurrentReleasesGiveTheLoadBackExactlyOnce() throws Exception {
    LoadLedger ledger = new LoadLedger();
    List<LoadLedger.Reservation> reservations = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      reservations.add(ledger.reserve(A, 1, 2));
    }
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      threads.add(Thread.ofPlatform().start(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        for (LoadLedger.Reservation r : reservations) {
          r.firstToken();
          r.release();
        }
      }));
    }
    go.countDown();
    for (Thread t : threads) {
      t.join();
    }
    assertEquals(LoadLedger.Routed.NONE, ledger.routed(A));
    assertEquals(0, ledger.open());
  }
}
