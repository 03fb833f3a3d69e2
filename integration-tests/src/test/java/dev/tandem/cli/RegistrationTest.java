package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerId;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.router.grpc.WorkerPool;
import dev.tandem.worker.WorkerServer;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The router admits only workers that can share its prefix hashes and model. */
@org.junit.jupiter.api.Tag("e2e")
class RegistrationTest {
  private static WorkerServer worker(String id, MockerConfig config) {
    return WorkerServer.start(WorkerServer.Config.local(new WorkerId(id)), new MockerEngine(config.withTiming(TimingModel.noDelay())));
  }

  @Test
  void workerWithAnotherBlockSizeIsRefusedLoudly() {
    try (WorkerServer w = worker("w32", MockerConfig.defaults().withPool(128, 32));
        WorkerPool pool = new WorkerPool(16, Duration.ofSeconds(10), Duration.ofSeconds(1))) {
      var e = assertThrows(IllegalStateException.class, () -> pool.add(w.address()));
      assertTrue(e.getMessage().contains("block size 32") && e.getMessage().contains("uses 16"), e.getMessage());
      assertTrue(pool.all().isEmpty());
    }
  }

  @Test
  void workersServingDifferentModelsDoNotShareAPool() {
    try (WorkerServer a = worker("a", MockerConfig.defaults().withPool(128, 16));
        WorkerServer b = worker("b", MockerConfig.defaults().withPool(128, 16).withModelName("other/model"));
        WorkerPool pool = new WorkerPool(16, Duration.ofSeconds(10), Duration.ofSeconds(1))) {
      pool.add(a.address());
      var e = assertThrows(IllegalStateException.class, () -> pool.add(b.address()));
      assertTrue(e.getMessage().contains("other/model"), e.getMessage());
    }
  }

  @Test
  void unreachableWorkerNamesItsAddress() {
    try (WorkerPool pool = new WorkerPool(16, Duration.ofMillis(300), Duration.ofSeconds(1))) {
      var e = assertThrows(IllegalStateException.class, () -> pool.add("127.0.0.1:1"));
      assertTrue(e.getMessage().contains("127.0.0.1:1"), e.getMessage());
    }
  }
}
