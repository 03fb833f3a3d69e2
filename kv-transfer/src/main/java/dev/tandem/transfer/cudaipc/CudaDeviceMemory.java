package dev.tandem.transfer.cudaipc;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuIpcCloseMemHandle;
import static jcuda.driver.JCudaDriver.cuIpcGetMemHandle;
import static jcuda.driver.JCudaDriver.cuIpcOpenMemHandle;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemGetAddressRange;
import static jcuda.driver.JCudaDriver.cuMemcpyAsync;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.lang.reflect.Field;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUipcMemHandle;
import jcuda.driver.CUipcMem_flags;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * {@link DeviceMemory} on GPU 0 (the one the engine's cuda backend opens; give each worker its GPU
 * with {@code CUDA_VISIBLE_DEVICES}) through JCuda's driver API: the device's primary context
 * (the engine's too, so their allocations share one address space), and a stream of its own for
 * the copies, which run beside the engine's kernels.
 *
 * <p>JCuda keeps an IPC handle's 64 bytes in a private field with no accessor; they are read and
 * written here by reflection (JCuda is on the class path, so this needs no {@code --add-opens}).
 */
public final class CudaDeviceMemory implements DeviceMemory {
  private static final Field HANDLE_BYTES = handleField();
  private static final String UNAVAILABLE = probe();

  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final CUstream stream = new CUstream();
  private boolean closed;

  private CudaDeviceMemory() {
    check(cuDeviceGet(device, 0), "cuDeviceGet(0)");
    check(cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain");
    try {
      current();
      check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    } catch (RuntimeException e) {
      cuDevicePrimaryCtxRelease(device);
      throw e;
    }
  }

  /**
   * GPU 0's memory.
   *
   * @throws IllegalStateException naming what is missing when no CUDA device can be used here
   */
  public static CudaDeviceMemory open() {
    if (UNAVAILABLE != null) {
      throw new IllegalStateException("cuda-ipc needs a CUDA device: " + UNAVAILABLE);
    }
    return new CudaDeviceMemory();
  }

  /** Why no CUDA device can be used here, naming what is missing; null when one can. */
  public static String unavailableReason() {
    return UNAVAILABLE;
  }

  private static String probe() {
    if (HANDLE_BYTES == null) {
      return "this JCuda's CUipcMemHandle has no 'reserved' field to carry a handle between processes";
    }
    try {
      int result = cuInit(0);
      if (result != CUresult.CUDA_SUCCESS) {
        return "the NVIDIA driver did not initialise (cuInit: " + CUresult.stringFor(result) + ")";
      }
      int[] count = new int[1];
      if (cuDeviceGetCount(count) != CUresult.CUDA_SUCCESS || count[0] == 0) {
        return "the NVIDIA driver found no CUDA device";
      }
      return null;
    } catch (LinkageError e) {
      // The whole chain: a second attempt (after the engine's) reads "Could not initialize class",
      // with the first attempt's failure as its cause.
      StringBuilder chain = new StringBuilder();
      for (Throwable t = e; t != null && chain.length() < 100_000; t = t.getCause()) {
        chain.append(t.getMessage() == null ? t.toString() : t.getMessage()).append('\n');
      }
      String cause = chain.toString();
      return cause.contains("libcuda.so.1")
          ? "no NVIDIA driver: libcuda.so.1 was not found (it comes with the driver)"
          : "JCuda's driver library did not load: " + cause.lines().findFirst().orElse(cause);
    }
  }

  private static Field handleField() {
    try {
      Field f = CUipcMemHandle.class.getDeclaredField("reserved");
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /** JCuda's device pointer at an address, and the address of one the driver filled in. */
  private static final class Ptr extends CUdeviceptr {
    long value() {
      return getNativePointer() + getByteOffset();
    }

    static CUdeviceptr at(long address) {
      return new CUdeviceptr().withByteOffset(address);
    }
  }

  private static CUdeviceptr at(long address) {
    return Ptr.at(address);
  }

  private static void check(int result, String call) {
    if (result != CUresult.CUDA_SUCCESS) {
      throw new IllegalStateException(call + " failed: " + CUresult.stringFor(result) + " (" + result + ")");
    }
  }

  private void current() {
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  }

  @Override
  public long processId() {
    return ProcessHandle.current().pid();
  }

  @Override
  public Allocation allocationOf(long address, long bytes) {
    current();
    Ptr base = new Ptr();
    long[] size = new long[1];
    int found = cuMemGetAddressRange(base, size, at(address));
    if (found != CUresult.CUDA_SUCCESS) {
      throw new IllegalArgumentException(
          "0x" + Long.toHexString(address) + " is not device memory of this process (cuMemGetAddressRange: "
              + CUresult.stringFor(found) + "); cuda-ipc registers GPU memory only");
    }
    long start = base.value();
    if (address + bytes > start + size[0]) {
      throw new IllegalArgumentException(bytes + " bytes at 0x" + Long.toHexString(address)
          + " run past the end of their allocation (" + size[0] + " bytes at 0x" + Long.toHexString(start) + ")");
    }
    CUipcMemHandle handle = new CUipcMemHandle();
    check(cuIpcGetMemHandle(handle, base), "cuIpcGetMemHandle");
    try {
      return new Allocation(start, size[0], ((byte[]) HANDLE_BYTES.get(handle)).clone());
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public long open(byte[] handle) {
    current();
    CUipcMemHandle h = new CUipcMemHandle();
    try {
      HANDLE_BYTES.set(h, handle.clone());
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
    Ptr base = new Ptr();
    check(cuIpcOpenMemHandle(base, h, CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
    return base.value();
  }

  @Override
  public void close(long openedBase) {
    current();
    check(cuIpcCloseMemHandle(at(openedBase)), "cuIpcCloseMemHandle");
  }

  @Override
  public void copy(long to, long from, long bytes) {
    current();
    check(cuMemcpyAsync(at(to), at(from), bytes, stream), "cuMemcpyAsync(" + bytes + " bytes)");
  }

  @Override
  public void synchronize() {
    current();
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  }

  @Override
  public long allocate(long bytes) {
    current();
    Ptr p = new Ptr();
    check(cuMemAlloc(p, bytes), "cuMemAlloc(" + bytes + ")");
    return p.value();
  }

  @Override
  public void free(long address) {
    current();
    check(cuMemFree(at(address)), "cuMemFree");
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    current();
    cuStreamSynchronize(stream);
    cuStreamDestroy(stream);
    cuDevicePrimaryCtxRelease(device);
  }
}
