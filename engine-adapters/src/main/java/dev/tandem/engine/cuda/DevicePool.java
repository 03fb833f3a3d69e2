package dev.tandem.engine.cuda;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * Device memory for one device, kept for reuse: {@link #acquire} hands out a buffer of the next
 * power-of-two size (at least 256 bytes) and takes it back when the buffer is closed, so a forward
 * pass that asks for the same sizes every step allocates only in its first. {@link #allocate} is
 * for long-lived memory (weights, the device KV cache), freed when closed.
 *
 * <p>Ownership: the pool owns every allocation it made; {@link #close()} frees them all, and
 * {@link #outstanding()} counts acquired buffers not yet closed (0 when everyone has given theirs
 * back). Threading: not thread-safe; used by the thread driving the device.
 */
public final class DevicePool implements AutoCloseable {
  /** Allocates and frees device memory by address: the GPU's, or a stand-in in tests of the bookkeeping. */
  public interface Memory {
    long allocate(long bytes);

    void free(long address);
  }

  private static final long SMALLEST = 256;

  private final Gpu gpu;
  private final Memory memory;
  private final Map<Long, ArrayDeque<Long>> free = new HashMap<>();
  private final Map<Long, Long> owned = new HashMap<>(); // every allocation alive, and its size
  private int outstanding;
  private boolean closed;

  public DevicePool(Gpu gpu) {
    this(gpu, gpu);
  }

  /** A pool whose buffers copy through {@code gpu} and whose memory comes from {@code memory}. */
  DevicePool(Gpu gpu, Memory memory) {
    this.gpu = gpu;
    this.memory = memory;
  }

  /** A buffer of at least {@code bytes}, from the pool; closing it gives it back. */
  public DeviceBuffer acquire(long bytes) {
    open();
    long size = sizeClass(bytes);
    ArrayDeque<Long> kept = free.get(size);
    long address = kept == null || kept.isEmpty() ? newAllocation(size) : kept.pop();
    outstanding++;
    return new DeviceBuffer(gpu, address, size, this::giveBack);
  }

  /** A buffer of exactly {@code bytes} that goes back to the device's allocator when closed. */
  public DeviceBuffer allocate(long bytes) {
    open();
    long address = newAllocation(Math.max(1, bytes));
    return new DeviceBuffer(gpu, address, bytes, b -> {
      if (owned.remove(b.address()) != null) {
        memory.free(b.address());
      }
    });
  }

  private long newAllocation(long bytes) {
    long address = memory.allocate(bytes);
    owned.put(address, bytes);
    return address;
  }

  private void giveBack(DeviceBuffer buffer) {
    outstanding--;
    if (closed) {
      return; // freed with the pool
    }
    free.computeIfAbsent(buffer.bytes(), s -> new ArrayDeque<>()).push(buffer.address());
  }

  /** The size class of a request: the next power of two, at least 256 bytes. */
  static long sizeClass(long bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException("asked for " + bytes + " bytes of device memory");
    }
    return Math.max(SMALLEST, Long.highestOneBit(bytes - 1) << 1);
  }

  /** Acquired buffers not yet closed. */
  public int outstanding() {
    return outstanding;
  }

  /** Bytes of device memory the pool holds (in use or kept). */
  public long heldBytes() {
    return owned.values().stream().mapToLong(Long::longValue).sum();
  }

  private void open() {
    if (closed) {
      throw new IllegalStateException("device pool is closed");
    }
  }

  /** Frees every allocation the pool made, in use or not. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    owned.keySet().forEach(memory::free);
    owned.clear();
    free.clear();
  }
}
