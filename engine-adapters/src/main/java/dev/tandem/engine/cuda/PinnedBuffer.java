package dev.tandem.engine.cuda;

import static dev.tandem.engine.cuda.CudaDriver.check;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;

import java.lang.foreign.MemorySegment;
import jcuda.Pointer;

/**
 * Page-locked host memory from the driver: copies between it and the device run at the link's
 * full rate without a bounce through a driver buffer. Owned by whoever allocated it; freed once by
 * {@link #close()}, after which {@link #segment()} must not be touched.
 *
 * <p>Threading: allocate and free with the device's context current; the segment may be written
 * from any thread.
 */
public final class PinnedBuffer implements AutoCloseable {
  private final Pointer pointer = new Pointer();
  private final long bytes;
  private final MemorySegment segment;
  private boolean closed;

  /** Allocates {@code bytes} (at most 2 GiB: the segment is seen through a ByteBuffer). */
  public PinnedBuffer(long bytes) {
    if (bytes <= 0 || bytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("pinned buffers hold 1 byte to 2 GiB, asked for " + bytes);
    }
    check(cuMemAllocHost(pointer, bytes), "cuMemAllocHost(" + bytes + ")");
    this.bytes = bytes;
    this.segment = MemorySegment.ofBuffer(pointer.getByteBuffer(0, bytes));
  }

  Pointer pointer() {
    return pointer;
  }

  public long bytes() {
    return bytes;
  }

  /** The memory, for the host to fill or read. */
  public MemorySegment segment() {
    return segment;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      cuMemFreeHost(pointer);
    }
  }
}
