package dev.tandem.engine.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ComputeBackendsTest {
  @Test
  void autoPicksTheVectorBackendAndNamesPickTheirs() {
    try (ComputeBackend auto = ComputeBackends.create("auto", 1);
        ComputeBackend scalar = ComputeBackends.create("scalar", 1)) {
      assertEquals("cpu", auto.name());
      assertEquals("scalar", scalar.name());
    }
  }

  @Test
  void unknownBackendNamesTheKnownOnes() {
    var e = assertThrows(IllegalArgumentException.class, () -> ComputeBackends.create("tpu", 1));
    assertTrue(e.getMessage().contains("'tpu'") && e.getMessage().contains("cpu") && e.getMessage().contains("scalar"), e.getMessage());
  }
}
