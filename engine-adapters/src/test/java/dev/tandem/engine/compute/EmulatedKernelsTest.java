package dev.tandem.engine.compute;

import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.cuda.EmulatedGpu;
import dev.tandem.engine.cuda.TestGpus;
import org.junit.jupiter.api.Tag;

/**
 * The compute conformance suite against the {@code cuda} backend on {@link EmulatedGpu}: the
 * backend's own code, {@code tandem.cu}'s kernels compiled for the CPU, the same launch shapes.
 * Skipped, naming what is missing, without g++ or CUDA's headers. Tagged {@code emulation}: a
 * thread per CUDA thread makes it slow (about 10 s on 2 cores), so the fast tier leaves it out.
 */
@Tag("emulation")
class EmulatedKernelsTest extends ComputeBackendConformanceTest {
  @Override
  protected ComputeBackend create() {
    return new CudaBackend(TestGpus.emulated());
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
