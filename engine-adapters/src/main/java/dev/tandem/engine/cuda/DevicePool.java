package dev.tandem.engine.cuda;

import static dev.tandem.engine.cuda.CudaDriver.check;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import jcuda.driver.CUdeviceptr;

/**
 * Device memory for one device, kept for reuse: {@link #acquire} hands out a buffer of the next
 * power-of-two size (at least 256 bytes) and takes it back when the buffer is closed, so a forward
 * pass that asks for the same sizes every step allocates only in its first. {@link #allocate} is
 * for long-lived memory (weights), freed to the driver when closed.
 *
 * <p>Ownership: the pool owns every allocation it made; {@link #close()} frees them all, and
 * {@link #outstanding()} counts acquired buffers not yet closed (0 when everyone has given theirs
 * back). Threading: not thread-safe; used by the thread driving the device.
 */
public final class DevicePool implements AutoCloseable {
  /** Allocates and frees device memory; the driver's, or a stand-in in tests of the bookkeeping. */
  public interface Memory {
    CUdeviceptr allocate(long bytes);

    void free(CUdeviceptr pointer);

    Memory DRIVER = new Memory() {
      @Override
      public CUdeviceptr allocate(long bytes) {
        CUdeviceptr pointer = new CUdeviceptr();
        check(cuMemAlloc(pointer, bytes), "cuMemAlloc(" + bytes + ")");
        return pointer;
      }

      @Override
      public void free(CUdeviceptr pointer) {
        check(cuMemFree(pointer), "cuMemFree");
      }
    };
  }

  private static final long SMALLEST = 256;

  private final Memory memory;
  private final Map<Long, ArrayDeque<CUdeviceptr>> free = new HashMap<>();
  private final Map<CUdeviceptr, Long> owned = new IdentityHashMap<>(); // every allocation alive, and its size
  private int outstanding;
  private boolean closed;

  public DevicePool(Memory memory) {
    this.memory = memory;
  }

  /** A buffer of at least {@code bytes}, from the pool; closing it gives it back. */
  public DeviceBuffer acquire(long bytes) {
    open();
    long size = sizeClass(bytes);
    ArrayDeque<CUdeviceptr> kept = free.get(size);
    CUdeviceptr pointer = kept == null || kept.isEmpty() ? newAllocation(size) : kept.pop();
    outstanding++;
    return new DeviceBuffer(pointer, size, this::giveBack);
  }

  /** A buffer of exactly {@code bytes} that goes back to the driver when closed. */
  public DeviceBuffer allocate(long bytes) {
    open();
    CUdeviceptr pointer = newAllocation(Math.max(1, bytes));
    return new DeviceBuffer(pointer, bytes, b -> {
      if (owned.remove(b.pointer()) != null) {
        memory.free(b.pointer());
      }
    });
  }

  private CUdeviceptr newAllocation(long bytes) {
    CUdeviceptr pointer = memory.allocate(bytes);
    owned.put(pointer, bytes);
    return pointer;
  }

  private void giveBack(DeviceBuffer buffer) {
    outstanding--;
    if (closed) {
      return; // freed with the pool
    }
    free.computeIfAbsent(buffer.bytes(), s -> new ArrayDeque<>()).push(buffer.pointer());
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
