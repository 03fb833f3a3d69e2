package dev.tandem.engine.compute;

import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.cuda.TestGpus;

/**
 * The {@code cuda} backend's kernels against the scalar reference, on GPU 0. Where no CUDA device
 * initialises every case is skipped with the driver's reason (visible in the report).
 */
class CudaBackendTest extends ComputeBackendConformanceTest {
  @Override
  protected ComputeBackend create() {
    return new CudaBackend(TestGpus.device());
  }

  @Override
  protected boolean slidingWindow() {
    return false;
  }

  @Override
  protected boolean geluKernel() {
    return false;
  }

  @Override
  protected boolean cappedScores() {
    return false;
  }

  @Override
  protected boolean quantizedKernels() {
    return false;
  }
}
