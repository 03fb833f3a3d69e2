package dev.tandem.engine.cuda;

import jcuda.driver.CUresult;

/** A CUDA driver call that failed: which call, its result code and the driver's name for it. */
public final class CudaException extends RuntimeException {
  private final int result;

  public CudaException(String call, int result) {
    super(call + " failed: " + CUresult.stringFor(result) + " (" + result + ")");
    this.result = result;
  }

  public CudaException(String message) {
    super(message);
    this.result = -1;
  }

  /** The driver's result code ({@link CUresult}), or -1 when no call returned one. */
  public int result() {
    return result;
  }
}
