package dev.tandem.planner.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.planner.Pool;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The local connector with real processes: each "worker" is {@code FakeWorker.java} (run by this
 * JDK's source launcher) serving /health and /drain as a worker's metrics port does, so that the
 * test proves start, readiness, drain-on-scale-down and start failures without a model.
 */
@org.junit.jupiter.api.Tag("e2e")
class LocalConnectorTest {
  @TempDir Path logs;

  private LocalConnector connector(List<String> extra) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String source = Path.of(getClass().getResource("/FakeWorker.java").toURI()).toString();
    return new LocalConnector(new LocalConnector.Spec(List.of(java, source), Map.of(Pool.PREFILL, "prefill", Pool.DECODE, "decode"),
        Map.of(Pool.PREFILL, extra, Pool.DECODE, extra), logs, 0, "127.0.0.1"));
  }

  private static void await(String what, java.util.function.BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
      Thread.sleep(100);
    }
  }

  @Test
  void startsWorkersThatBecomeReadyAndDrainsTheLeastLoadedOnScaleDown() throws Exception {
    try (LocalConnector c = connector(List.of())) {
      c.scale(Pool.DECODE, 3, List.of());
      assertEquals(3, c.workers(Pool.DECODE).size());
      await("the workers to serve", () -> c.starting(Pool.DECODE) == 0);
      List<String> ids = c.workers(Pool.DECODE);
      // The routers say the last one started is the least loaded: it is the one drained.
      c.scale(Pool.DECODE, 2, List.of(ids.get(2), ids.get(0)));
      List<String> left = c.workers(Pool.DECODE);
      assertEquals(List.of(ids.get(0), ids.get(1)), left);
      await("the drained worker to exit", () -> c.workers(Pool.DECODE).size() == 2);
      assertTrue(java.nio.file.Files.readString(logs.resolve(ids.get(2) + ".log")).contains("serving"));
      c.scale(Pool.DECODE, 0, List.of());
      assertTrue(c.workers(Pool.DECODE).isEmpty(), "scale to zero drains every worker");
      assertEquals(0, c.workers(Pool.PREFILL).size(), "the other pool is untouched");
    }
  }

  /**
   * The scale that starts a worker which dies at once, or (on a busy machine, where the JVM takes
   * longer than the connector's two-second look) the pool's next scale, fails with the log's reason.
   */
  @Test
  void aWorkerThatDiesAtStartFailsTheScaleWithItsLog() throws Exception {
    try (LocalConnector c = connector(List.of("--fail-at-start"))) {
      ConnectorException e = scaleUntilItFails(c);
      assertTrue(e.getMessage().contains("exited with 3") && e.getMessage().contains("refusing to start"), e.getMessage());
      assertFalse(c.workers(Pool.PREFILL).iterator().hasNext());
    }
  }

  @Test
  void aWorkerThatDiesLaterBeforeServingFailsTheNextScaleInsteadOfBeingRestarted() throws Exception {
    try (LocalConnector c = connector(List.of("--fail-after-ms", "2500"))) {
      c.scale(Pool.PREFILL, 1, List.of());
      String first = c.workers(Pool.PREFILL).getFirst();
      ConnectorException e = scaleUntilItFails(c);
      assertTrue(e.getMessage().contains(first + " exited with 4") && e.getMessage().contains("failed to load"), e.getMessage());
      assertEquals(List.of(), c.workers(Pool.PREFILL), "the failed scale started no replacement");
      assertFalse(java.nio.file.Files.exists(logs.resolve("local-prefill-1.log")), "no second worker was started");
    }
  }

  /** Calls {@code scale(PREFILL, 1)} until it fails; only a failure before anything else ran can be slow. */
  private static ConnectorException scaleUntilItFails(LocalConnector c) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (true) {
      try {
        c.scale(Pool.PREFILL, 1, List.of());
      } catch (ConnectorException e) {
        return e;
      }
      assertTrue(System.nanoTime() < deadline, "no scale failed within 30 s");
      Thread.sleep(100);
    }
  }
}
