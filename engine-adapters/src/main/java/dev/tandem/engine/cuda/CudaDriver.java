package dev.tandem.engine.cuda;

import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuInit;

import jcuda.driver.CUresult;

/**
 * The CUDA driver, loaded and initialised once per process. JCuda's driver binding is a native
 * library that needs only {@code libcuda.so.1}, which an NVIDIA driver installs; where it is
 * missing, or the driver finds no device, {@link #unavailableReason()} says which.
 *
 * <p>Thread-safe: the state is computed once, on first use.
 */
public final class CudaDriver {
  private CudaDriver() {}

  private record State(int devices, int version, String reason) {}

  private static final class Holder {
    static final State STATE = load();
  }

  private static State load() {
    try {
      int result = cuInit(0);
      if (result == CUresult.CUDA_ERROR_NO_DEVICE) {
        return new State(0, 0, "the NVIDIA driver found no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)");
      }
      if (result != CUresult.CUDA_SUCCESS) {
        return new State(0, 0, "the NVIDIA driver did not initialise (cuInit: " + CUresult.stringFor(result) + ")");
      }
      int[] count = new int[1];
      int[] version = new int[1];
      check(cuDeviceGetCount(count), "cuDeviceGetCount");
      check(cuDriverGetVersion(version), "cuDriverGetVersion");
      if (count[0] == 0) {
        return new State(0, version[0], "the NVIDIA driver (CUDA " + versionName(version[0]) + ") found no CUDA device");
      }
      return new State(count[0], version[0], null);
    } catch (LinkageError e) {
      // JCuda's message holds every attempt's stack trace: keep what names the missing piece.
      String cause = e.getMessage() == null ? e.toString() : e.getMessage();
      if (cause.contains("libcuda.so.1")) {
        return new State(0, 0, "no NVIDIA driver: libcuda.so.1 was not found (it comes with the driver; JCuda's driver binding needs it)");
      }
      return new State(0, 0, "JCuda's driver library did not load: " + cause.lines().findFirst().orElse(cause));
    } catch (CudaException e) {
      return new State(0, 0, e.getMessage());
    }
  }

  /** Whether a CUDA device can be used here. */
  public static boolean available() {
    return Holder.STATE.reason() == null;
  }

  /** Why no CUDA device can be used here, naming what is missing; null when one can. */
  public static String unavailableReason() {
    return Holder.STATE.reason();
  }

  /** Devices the driver sees (0 when unavailable). */
  public static int deviceCount() {
    return Holder.STATE.devices();
  }

  /** The driver's CUDA version as "major.minor" (e.g. "12.8"), or "none". */
  public static String version() {
    return Holder.STATE.version() == 0 ? "none" : versionName(Holder.STATE.version());
  }

  static String versionName(int version) {
    return version / 1000 + "." + version % 1000 / 10;
  }

  /** Throws a {@link CudaException} naming {@code call} unless {@code result} is success. */
  static void check(int result, String call) {
    if (result != CUresult.CUDA_SUCCESS) {
      throw new CudaException(call, result);
    }
  }
}
