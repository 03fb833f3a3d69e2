package dev.tandem.transfer;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Moves bytes between processes the way NIXL does: an agent registers memory and hands out
 * descriptors of it; a peer holding those descriptors reads them into its own memory.
 *
 * <p>Ownership: registering does not transfer ownership. The caller keeps the segment alive (its
 * {@code Arena} open) until it deregisters it; reads in flight into a local segment need that
 * segment alive until their future completes.
 *
 * <p>Thread-safe.
 */
public interface TransferAgent extends AutoCloseable {
  /** The backend's name ({@code local}, {@code tcp}, ...). */
  String backend();

  /** How peers reach this agent; descriptors carry it. */
  String address();

  /**
   * Registers memory for remote reads.
   *
   * @throws IllegalArgumentException if the backend cannot serve this segment (e.g. heap memory
   *     where the backend needs native memory)
   */
  MemoryDescriptor register(MemorySegment segment);

  /**
   * Allocates {@code bytes} (64-byte aligned) registered with this agent, where the backend reads
   * fastest: for {@code ucx}, UCX's own shared-memory segments, which readers on the node copy
   * from directly, without this process's CPU. The agent owns the memory: it stays valid until the
   * agent closes (so whoever uses it must stop first) and is not to be deregistered.
   */
  RegisteredMemory allocate(long bytes);

  /**
   * Whether this agent's memory (what it registers and allocates, and what its reads land in) is
   * GPU memory: segments that name device addresses and must never be read or written from Java
   * ({@code cuda-ipc}). False for host memory (every other backend).
   */
  default boolean deviceMemory() {
    return false;
  }

  /**
   * Memory of this agent's kind that reads can land in and nobody keeps (the link probe's
   * destination); {@link Landing#close()} frees it. Host agents: native memory, 64-byte aligned.
   */
  default Landing landing(long bytes) {
    java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
    return new Landing(arena.allocate(bytes, 64), arena::close);
  }

  /** A {@link #landing} area: its segment, freed once by {@link #close()}. */
  record Landing(MemorySegment segment, Runnable free) implements AutoCloseable {
    @Override
    public void close() {
      free.run();
    }
  }

  /** Stops serving a region; reads of it fail from now on. */
  void deregister(MemoryDescriptor region);

  /**
   * Reads {@code remote.get(i)} into {@code local.get(i)} for every i (equal lengths). The future
   * completes when every byte has landed, or exceptionally on the first error, on the peer going
   * away, or after {@code timeout}; it never hangs. {@code listener} (may be null) hears each
   * descriptor as it completes. The future may complete on the agent's own I/O thread (tcp: a
   * Netty event loop; ucx: its worker thread) and the listener runs there: both must be quick, and
   * a dependent that blocks or takes a lock attaches with an {@code *Async} method.
   */
  CompletableFuture<Void> read(
      List<MemoryDescriptor> remote, List<MemorySegment> local, Duration timeout, TransferListener listener);

  @Override
  void close();

  /** Per-descriptor completion, e.g. to start work on a layer as soon as its KV has arrived. */
  @FunctionalInterface
  interface TransferListener {
    void descriptorDone(int index);
  }
}
