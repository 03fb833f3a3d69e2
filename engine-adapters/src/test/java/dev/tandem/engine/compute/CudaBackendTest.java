package dev.tandem.engine.compute;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.cuda.CudaDevice;
import dev.tandem.engine.cuda.CudaDriver;

/**
 * The {@code cuda} backend's kernels against the scalar reference, on GPU 0. Where no CUDA device
 * initialises every case is skipped with the driver's reason (visible in the report).
 */
class CudaBackendTest extends ComputeBackendConformanceTest {
  @Override
  protected ComputeBackend create() {
    assumeTrue(CudaDriver.available(), "cuda skipped: " + CudaDriver.unavailableReason());
    return new CudaBackend(CudaDevice.open(0));
  }
}
