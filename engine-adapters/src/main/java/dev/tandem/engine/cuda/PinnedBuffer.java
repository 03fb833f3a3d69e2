package dev.tandem.engine.cuda;

import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory from the device ({@link Gpu#allocatePinned}): copies between it and the
 * device run at the link's full rate without a bounce through a driver buffer. Owned by whoever
 * made it; freed once by {@link #close()}, after which {@link #segment()} must not be touched.
 *
 * <p>Threading: allocate and free with the device current; the segment may be written from any thread.
 */
public final class PinnedBuffer implements AutoCloseable {
  private final Gpu gpu;
  private final MemorySegment segment;
  private boolean closed;

  /** Allocates {@code bytes} (1 byte to 2 GiB). */
  public PinnedBuffer(Gpu gpu, long bytes) {
    if (bytes <= 0 || bytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("pinned buffers hold 1 byte to 2 GiB, asked for " + bytes);
    }
    this.gpu = gpu;
    this.segment = gpu.allocatePinned(bytes);
  }

  public long bytes() {
    return segment.byteSize();
  }

  /** The memory, for the host to fill or read. */
  public MemorySegment segment() {
    return segment;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      gpu.freePinned(segment);
    }
  }
}
