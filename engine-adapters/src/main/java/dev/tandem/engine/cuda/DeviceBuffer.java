package dev.tandem.engine.cuda;

import static dev.tandem.engine.cuda.CudaDriver.check;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static jcuda.driver.JCudaDriver.cuMemsetD8;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

/**
 * A range of device memory. Its owner is whoever obtained it ({@link DevicePool#acquire} or {@link
 * DevicePool#allocate}): closing it hands the memory back to where it came from, exactly once
 * (later closes do nothing); it must not be used after. Copies are synchronous: they return once
 * the bytes have arrived, after every kernel queued before them on the device's stream.
 *
 * <p>Threading: the device's context must be current on the calling thread ({@link
 * CudaDevice#makeCurrent()}); close may come from any thread holding it.
 */
public final class DeviceBuffer implements AutoCloseable {
  /** Largest single host copy: JCuda reaches native memory through a ByteBuffer (int-sized). */
  private static final long CHUNK = 1L << 30;

  private final CUdeviceptr pointer;
  private final long bytes;
  private final Consumer<DeviceBuffer> release;
  private final AtomicBoolean closed = new AtomicBoolean();

  DeviceBuffer(CUdeviceptr pointer, long bytes, Consumer<DeviceBuffer> release) {
    this.pointer = pointer;
    this.bytes = bytes;
    this.release = release;
  }

  public CUdeviceptr pointer() {
    return pointer;
  }

  /** Capacity in bytes (a pooled buffer may be larger than asked for). */
  public long bytes() {
    return bytes;
  }

  public void copyFrom(float[] host, int count) {
    fits((long) count * Float.BYTES);
    check(cuMemcpyHtoD(pointer, Pointer.to(host), (long) count * Float.BYTES), "cuMemcpyHtoD");
  }

  public void copyFrom(int[] host, int count) {
    fits((long) count * Integer.BYTES);
    check(cuMemcpyHtoD(pointer, Pointer.to(host), (long) count * Integer.BYTES), "cuMemcpyHtoD");
  }

  /** Copies all of {@code host} to the start of this buffer (a heap segment goes through native memory). */
  public void copyFrom(MemorySegment host) {
    fits(host.byteSize());
    if (!host.isNative()) {
      try (Arena arena = Arena.ofConfined()) {
        copyFrom(arena.allocate(host.byteSize(), 16).copyFrom(host));
      }
      return;
    }
    for (long at = 0; at < host.byteSize(); at += CHUNK) {
      long n = Math.min(CHUNK, host.byteSize() - at);
      check(cuMemcpyHtoD(pointer.withByteOffset(at), Pointer.to(host.asSlice(at, n).asByteBuffer()), n), "cuMemcpyHtoD");
    }
  }

  /** Copies {@code bytes} bytes of pinned host memory to the start of this buffer. */
  public void copyFrom(PinnedBuffer host, long bytes) {
    fits(bytes);
    check(cuMemcpyHtoD(pointer, host.pointer(), bytes), "cuMemcpyHtoD");
  }

  /** Sets every byte to zero (queued on the legacy stream, so ordered with the synchronous copies). */
  public void zero() {
    fits(0);
    check(cuMemsetD8(pointer, (byte) 0, bytes), "cuMemsetD8");
  }

  /** Copies the first {@code host.length} bytes back. */
  public void copyTo(byte[] host) {
    fits(host.length);
    check(cuMemcpyDtoH(Pointer.to(host), pointer, host.length), "cuMemcpyDtoH");
  }

  public void copyTo(float[] host, int count) {
    fits((long) count * Float.BYTES);
    check(cuMemcpyDtoH(Pointer.to(host), pointer, (long) count * Float.BYTES), "cuMemcpyDtoH");
  }

  private void fits(long n) {
    if (closed.get()) {
      throw new IllegalStateException("device buffer used after close");
    }
    if (n > bytes) {
      throw new IllegalArgumentException(n + " bytes do not fit a device buffer of " + bytes);
    }
  }

  /** Hands the memory back (to its pool, or to the driver); once. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      release.accept(this);
    }
  }
}
