package dev.tandem.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerRole;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every discovery backend must do, run against each: a worker that joins is seen by every
 * watcher, one that leaves or dies is dropped (dies: within the backend's bound), one that comes back
 * is seen again, a watch survives its backend restarting without dropping anyone, and two watchers
 * agree.
 */
abstract class DiscoveryConformanceTest {
  /** One backend under test, with the means to make workers come and go as they would for real. */
  interface Backend extends AutoCloseable {
    /** A discovery client as another process (a router) would open it. */
    Discovery client();

    /** {@code worker} joins (registers, or becomes a ready endpoint). */
    void join(WorkerRecord worker);

    /** {@code worker} leaves on purpose (drain). */
    void leave(String workerId);

    /** {@code worker} dies without a word (its lease runs out, or its pod turns not-ready). */
    void crash(String workerId);

    /** The backend goes away and comes back with its state (etcd restart, API server restart). */
    void restart() throws Exception;

    /** How long a crash may take to show. */
    Duration crashBound();

    /** Whether a record's every field survives (false where the backend knows only addresses and roles). */
    boolean keepsWholeRecord();
  }

  protected abstract Backend open() throws Exception;

  private Backend backend;
  private final List<AutoCloseable> opened = new CopyOnWriteArrayList<>();

  @BeforeEach
  void openBackend() throws Exception {
    backend = open();
  }

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : opened.reversed()) {
      c.close();
    }
    if (backend != null) { // null when open() skipped: the backend's server is not installed
      backend.close();
    }
  }

  static WorkerRecord worker(String id, int port) {
    return new WorkerRecord(id, WorkerRole.DECODE, "127.0.0.1:" + port, "127.0.0.1:" + (port + 1), "qwen3", 16, 1000, "node-a");
  }

  /** A listener that records every call, in order: {@code +id} added, {@code -id} removed. */
  static class Calls implements WorkerSetListener {
    final List<String> calls = new CopyOnWriteArrayList<>();

    @Override
    public void added(WorkerRecord worker) {
      calls.add("+" + worker.workerId());
    }

    @Override
    public void removed(WorkerRecord worker) {
      calls.add("-" + worker.workerId());
    }
  }

  /** A watch of a new client of the backend, recording every call. */
  final class Recorder extends Calls {
    final Watch watch;

    Recorder() {
      Discovery d = backend.client();
      opened.add(d);
      watch = d.watch(this);
      opened.add(watch);
    }

    Set<String> ids() {
      return watch.current().keySet();
    }
  }

  static void await(String what, Duration bound, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + bound.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + bound.toMillis() + " ms: " + what);
      }
      Thread.sleep(20);
    }
  }

  private static final Duration SOON = Duration.ofSeconds(10);

  @Test
  void aJoiningWorkerIsSeenWithItsRecord() throws Exception {
    Recorder r = new Recorder();
    WorkerRecord w = worker("w1", 9100);
    backend.join(w);
    await("w1 seen", SOON, () -> r.ids().contains("w1"));
    WorkerRecord seen = r.watch.current().get("w1");
    assertEquals(w.grpcAddress(), seen.grpcAddress());
    assertEquals(w.transferAddress(), seen.transferAddress());
    assertEquals(WorkerRole.DECODE, seen.role());
    if (backend.keepsWholeRecord()) {
      assertEquals(w, seen);
    }
    assertEquals(List.of("+w1"), r.calls);
  }

  @Test
  void aWatcherThatStartsLateSeesWhoIsThere() throws Exception {
    backend.join(worker("w1", 9100));
    backend.join(worker("w2", 9110));
    Recorder first = new Recorder();
    await("both seen", SOON, () -> first.ids().equals(Set.of("w1", "w2")));
    Recorder late = new Recorder();
    await("late watcher sees both", SOON, () -> late.ids().equals(Set.of("w1", "w2")));
  }

  @Test
  void aWorkerThatLeavesIsDroppedAndCanComeBack() throws Exception {
    Recorder r = new Recorder();
    backend.join(worker("w1", 9100));
    backend.join(worker("w2", 9110));
    await("both seen", SOON, () -> r.ids().equals(Set.of("w1", "w2")));
    backend.leave("w1");
    await("w1 dropped", SOON, () -> r.ids().equals(Set.of("w2")));
    backend.join(worker("w1", 9100));
    await("w1 back", SOON, () -> r.ids().equals(Set.of("w1", "w2")));
    assertEquals(2, r.calls.stream().filter("+w1"::equals).count(), r.calls.toString());
    assertEquals(1, r.calls.stream().filter("-w1"::equals).count(), r.calls.toString());
    assertFalse(r.calls.contains("-w2"), r.calls.toString());
  }

  @Test
  void aWorkerThatDiesIsDroppedWithinItsBound() throws Exception {
    Recorder r = new Recorder();
    backend.join(worker("w1", 9100));
    backend.join(worker("w2", 9110));
    await("both seen", SOON, () -> r.ids().equals(Set.of("w1", "w2")));
    long t0 = System.nanoTime();
    backend.crash("w1");
    await("w1 dropped after its crash", backend.crashBound().plusSeconds(2), () -> r.ids().equals(Set.of("w2")));
    assertTrue(System.nanoTime() - t0 < backend.crashBound().plusSeconds(2).toNanos());
  }

  @Test
  void aWatchSurvivesItsBackendRestartingAndKeepsTheSetMeanwhile() throws Exception {
    Recorder r = new Recorder();
    backend.join(worker("w1", 9100));
    await("w1 seen", SOON, () -> r.ids().contains("w1"));
    backend.restart();
    assertEquals(Set.of("w1"), r.ids(), "the last known set is kept across the restart");
    backend.join(worker("w2", 9110));
    await("w2, joined after the restart, seen", Duration.ofSeconds(30), () -> r.ids().equals(Set.of("w1", "w2")));
    backend.leave("w2");
    await("w2 dropped after the restart", SOON, () -> r.ids().equals(Set.of("w1")));
    assertFalse(r.calls.contains("-w1"), "w1 was never dropped: " + r.calls);
  }

  @Test
  void twoWatchersAgree() throws Exception {
    Recorder a = new Recorder();
    Recorder b = new Recorder();
    for (int i = 0; i < 5; i++) {
      backend.join(worker("w" + i, 9100 + 10 * i));
    }
    backend.leave("w3");
    Set<String> expected = Set.of("w0", "w1", "w2", "w4");
    await("a sees the set", SOON, () -> a.ids().equals(expected));
    await("b sees the set", SOON, () -> b.ids().equals(expected));
    Map<String, WorkerRecord> ac = a.watch.current();
    assertEquals(ac, b.watch.current());
  }
}
