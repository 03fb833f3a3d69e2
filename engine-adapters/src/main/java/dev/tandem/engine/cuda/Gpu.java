package dev.tandem.engine.cuda;

import java.lang.foreign.MemorySegment;

/**
 * Where the cuda backend's memory lives and its kernels run: a GPU through JCuda's driver API
 * ({@link CudaDevice}), or, in tests, the same kernels compiled for the CPU over host memory.
 * Device memory is named by its address (a {@code long}); host memory is a {@link MemorySegment}
 * (native, or a Java array's). Launches and copies run in the order they are issued; copies to the
 * host return once the bytes are there, after everything issued before them.
 *
 * <p>Threading: one thread at a time (the engine's), each call with the device current on it
 * ({@link #makeCurrent()}).
 */
public interface Gpu extends DevicePool.Memory, AutoCloseable {
  /** A kernel argument that is a pointer: an address in device memory, or host memory mapped into it. */
  record Ptr(long address) {}

  /**
   * Names this device uniquely across hosts (a GPU's UUID as {@code nvidia-smi -L} prints it, {@code
   * GPU-…}): two workers on the same id share one GPU.
   */
  String id();

  /** Makes this device current on the calling thread. */
  void makeCurrent();

  /** Copies all of {@code host} to device address {@code to}. */
  void copyToDevice(long to, MemorySegment host);

  /** Fills all of {@code host} from device address {@code from}. */
  void copyToHost(MemorySegment host, long from);

  /** Sets {@code bytes} bytes from device address {@code at} to zero. */
  void zero(long at, long bytes);

  /**
   * Launches kernel {@code name} of {@code tandem.cu} over {@code shape}; arguments in the kernel's
   * order: {@link Ptr}, {@code Integer} (int), {@code Long} (long long) or {@code Float}.
   */
  void launch(String name, LaunchShapes.Shape shape, Object... args);

  /** Waits for everything issued so far. */
  void synchronize();

  /**
   * Starts recording this thread's launches into a graph instead of running them; until {@link
   * #endCapture()} nothing else may be issued (no copy, no synchronisation).
   */
  void beginCapture();

  /** Stops recording: the launches since {@link #beginCapture()}, replayed with the same arguments by each {@link Graph#launch()}. */
  Graph endCapture();

  /** Marks this point of the issued work; its time is known once the work before it has run. */
  Event record();

  /** A point in the issued work (a CUDA event). Closed once by its owner. */
  interface Event extends AutoCloseable {
    /** Milliseconds from {@code earlier} to this event (waits for this one). */
    double millisSince(Event earlier);

    @Override
    void close();
  }

  /** Recorded launches (a CUDA graph): one launch call for many kernels. Closed once by its owner. */
  interface Graph extends AutoCloseable {
    /** Issues every recorded launch, in order, as one. */
    void launch();

    @Override
    void close();
  }

  /** Maps host memory into the device (page-locking it); returns its device address. */
  long mapHost(MemorySegment host);

  /** Undoes {@link #mapHost} for the same segment. */
  void unmapHost(MemorySegment host);

  /** Page-locked host memory ({@code bytes} ≤ 2 GiB). */
  MemorySegment allocatePinned(long bytes);

  void freePinned(MemorySegment pinned);

  /** Releases the device (after waiting for its work). */
  @Override
  void close();
}
