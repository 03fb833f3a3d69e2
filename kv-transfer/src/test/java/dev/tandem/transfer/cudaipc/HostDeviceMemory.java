package dev.tandem.transfer.cudaipc;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Host memory standing in for a GPU, for the cuda-ipc agent's tests where no GPU is: "device
 * addresses" are native addresses of this process, a handle names an allocation in a registry of
 * this JVM, opening one returns the same address, and copies are memory copies. Each instance
 * claims a process id of its own, so that two agents in one JVM open each other's handles as two
 * processes would (and a test can count the opens and closes).
 */
public final class HostDeviceMemory implements DeviceMemory {
  private static final AtomicLong NEXT_PID = new AtomicLong(1_000_000_000L);
  private static final AtomicLong NEXT_HANDLE = new AtomicLong(1);
  private static final Map<Long, Allocation> HANDLES = new ConcurrentHashMap<>();

  private final long pid = NEXT_PID.incrementAndGet();
  /** Ranges registered or allocated here, by base: an allocation as the driver would report it. */
  private final Map<Long, Allocation> allocations = new ConcurrentHashMap<>();
  private final Map<Long, Arena> owned = new ConcurrentHashMap<>();
  public final AtomicInteger opens = new AtomicInteger();
  public final AtomicInteger closes = new AtomicInteger();
  /** How many of the next opens fail, as {@code cuIpcOpenMemHandle} can (out of memory, a peer it cannot map). */
  public final AtomicInteger failingOpens = new AtomicInteger();

  @Override
  public long processId() {
    return pid;
  }

  @Override
  public Allocation allocationOf(long address, long bytes) {
    for (Allocation a : allocations.values()) {
      if (address >= a.base() && address + bytes <= a.base() + a.size()) {
        return a;
      }
    }
    // Host memory the test registered: its own range is its allocation.
    long id = NEXT_HANDLE.getAndIncrement();
    Allocation a = new Allocation(address, bytes, ByteBuffer.allocate(8).putLong(id).array());
    HANDLES.put(id, a);
    allocations.put(address, a);
    return a;
  }

  @Override
  public long open(byte[] handle) {
    Allocation a = HANDLES.get(ByteBuffer.wrap(handle).getLong());
    if (a == null) {
      throw new IllegalStateException("no such handle");
    }
    if (failingOpens.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      throw new IllegalStateException("cuIpcOpenMemHandle failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
    }
    opens.incrementAndGet();
    return a.base();
  }

  @Override
  public void close(long openedBase) {
    closes.incrementAndGet();
  }

  @Override
  public void copy(long to, long from, long bytes) {
    MemorySegment.copy(MemorySegment.ofAddress(from).reinterpret(bytes), 0, MemorySegment.ofAddress(to).reinterpret(bytes), 0, bytes);
  }

  @Override
  public void synchronize() {}

  @Override
  public long allocate(long bytes) {
    Arena arena = Arena.ofShared();
    long address = arena.allocate(bytes, 256).address();
    owned.put(address, arena);
    return address;
  }

  @Override
  public void free(long address) {
    Arena arena = owned.remove(address);
    if (arena == null) {
      throw new IllegalStateException("0x" + Long.toHexString(address) + " was not allocated here (or freed twice)");
    }
    allocations.remove(address);
    arena.close();
  }

  /** Allocations not freed yet. */
  public int live() {
    return owned.size();
  }

  @Override
  public void close() {}
}
