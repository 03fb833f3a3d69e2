package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The GPUs tests run on: GPU 0 ({@code "cuda"}), or the kernels compiled for the CPU ({@code
 * "emulated"}). A kind that cannot run here skips the calling test, naming what is missing.
 */
public final class TestGpus {
  private TestGpus() {}

  public static Gpu open(String kind) {
    return kind.equals("cuda") ? device() : emulated();
  }

  /** GPU 0; skips without a CUDA device, with the driver's reason. */
  public static CudaDevice device() {
    assumeTrue(CudaDriver.available(), "cuda skipped: " + CudaDriver.unavailableReason());
    return CudaDevice.open(0);
  }

  /** The emulated GPU; skips without g++ or CUDA's headers. */
  public static EmulatedGpu emulated() {
    String missing = EmulatedGpu.unavailableReason();
    assumeTrue(missing == null, "kernel emulation skipped: " + missing);
    return new EmulatedGpu();
  }
}
