package dev.tandem.transfer.cudaipc;

/**
 * What the {@code cuda-ipc} agent does on a GPU: find the allocation that holds a range and make
 * an IPC handle for it, open a peer's handle, copy device to device, allocate. {@link
 * CudaDeviceMemory} does it through JCuda's driver API; the tests put host memory in its place
 * (the agent's protocol, checks and lifecycle are the same; the copies are memory copies).
 *
 * <p>Addresses are device addresses (unified addressing: one space for every device of the
 * process). Thread-safe: each call makes the device's context current on its own thread.
 */
public interface DeviceMemory extends AutoCloseable {
  /** An allocation's base address, its size, and the IPC handle that maps it into another process. */
  record Allocation(long base, long size, byte[] handle) {}

  /**
   * Identifies this process to peers: an owner with the same identity is read at its own
   * addresses, since a process cannot open a handle it made.
   */
  long processId();

  /**
   * The allocation holding {@code [address, address + bytes)}.
   *
   * @throws IllegalArgumentException when the range is not device memory of one allocation
   */
  Allocation allocationOf(long address, long bytes);

  /** Maps a peer's allocation into this process; returns its base address here. */
  long open(byte[] handle);

  /** Unmaps an allocation {@link #open} mapped (by the base it returned). */
  void close(long openedBase);

  /** Queues a copy of {@code bytes} from {@code from} to {@code to} (device addresses, any device). */
  void copy(long to, long from, long bytes);

  /** Waits until every copy queued so far has landed. */
  void synchronize();

  /** {@code bytes} of device memory, this agent's until {@link #free}. */
  long allocate(long bytes);

  void free(long address);

  /** Releases the device (its stream, its reference to the context). */
  @Override
  void close();
}
