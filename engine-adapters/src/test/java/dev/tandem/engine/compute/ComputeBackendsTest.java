package dev.tandem.engine.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import dev.tandem.engine.cuda.CudaDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ComputeBackendsTest {
  @Test
  void autoPicksCudaWhereADeviceInitialisesElseTheVectorBackendAndNamesPickTheirs() {
    try (ComputeBackend auto = ComputeBackends.create("auto", 1);
        ComputeBackend scalar = ComputeBackends.create("scalar", 1)) {
      assertEquals(CudaDriver.available() ? "cuda" : "cpu", auto.name());
      assertEquals("scalar", scalar.name());
    }
  }

  @Test
  void unknownBackendNamesTheKnownOnes() {
    var e = assertThrows(IllegalArgumentException.class, () -> ComputeBackends.create("tpu", 1));
    assertTrue(e.getMessage().contains("'tpu'") && e.getMessage().contains("cpu") && e.getMessage().contains("scalar")
        && e.getMessage().contains("cuda"), e.getMessage());
  }

  /** Where no GPU (or no driver) is, naming cuda fails at once and says what is missing. */
  @Test
  void cudaWithoutADeviceFailsNamingWhatIsMissing() {
    assumeFalse(CudaDriver.available(), "a CUDA device is here");
    var e = assertThrows(IllegalArgumentException.class, () -> ComputeBackends.create("cuda", 1));
    assertTrue(e.getMessage().startsWith("compute backend 'cuda' cannot run here: "), e.getMessage());
    assertTrue(e.getMessage().contains(CudaDriver.unavailableReason()), e.getMessage());
    if (!Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/libcuda.so.1"))) {
      assertTrue(e.getMessage().contains("libcuda.so.1"), e.getMessage());
    }
  }
}
