package dev.tandem.transfer.cudaipc;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;

import java.lang.foreign.MemorySegment;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;

/** Host ↔ GPU 0 copies for the device tests (on the primary context, as the agent's). */
public final class DeviceBytes {
  private static final CUcontext CONTEXT = retain();

  private DeviceBytes() {}

  private static CUcontext retain() {
    CUdevice device = new CUdevice();
    check(cuDeviceGet(device, 0));
    CUcontext context = new CUcontext();
    check(cuDevicePrimaryCtxRetain(context, device));
    return context;
  }

  /** Copies all of {@code host} (native) to device address {@code to}. */
  public static void write(long to, MemorySegment host) {
    check(cuCtxSetCurrent(CONTEXT));
    check(cuMemcpyHtoD(new CUdeviceptr().withByteOffset(to), Pointer.to(host.asByteBuffer()), host.byteSize()));
  }

  /** Fills all of {@code host} (native) from device address {@code from}. */
  public static void read(MemorySegment host, long from) {
    check(cuCtxSetCurrent(CONTEXT));
    check(cuMemcpyDtoH(Pointer.to(host.asByteBuffer()), new CUdeviceptr().withByteOffset(from), host.byteSize()));
  }

  private static void check(int result) {
    if (result != CUresult.CUDA_SUCCESS) {
      throw new IllegalStateException("CUDA: " + CUresult.stringFor(result));
    }
  }
}
