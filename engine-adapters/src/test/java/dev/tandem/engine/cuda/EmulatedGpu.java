package dev.tandem.engine.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link Gpu} made of the CPU: device memory is host memory (an address is the host address),
 * launches run {@code tandem.cu}'s kernels compiled for the CPU ({@link KernelEmulator}), mapping
 * host memory returns its own address (as unified addressing does on a GPU), everything runs in
 * order, at once, and a captured graph records each launch with its arguments and replays them
 * (so a graph that baked in a buffer reused since shows up as wrong results, as on a GPU). Lets {@link CudaBackend} and the engine's device forward pass run unchanged
 * in tests where no GPU is; the JCuda calls of {@link CudaDevice} are the only part left out.
 */
public final class EmulatedGpu implements Gpu {
  private final KernelEmulator emulator;
  private final Map<Long, Arena> allocations = new HashMap<>();
  private final Map<Long, Integer> mapped = new HashMap<>();
  private List<Runnable> capturing; // launches recorded since beginCapture, else null
  private int graphLaunches;

  /** @throws IllegalStateException naming what is missing (g++, CUDA's headers) */
  public EmulatedGpu() {
    this.emulator = KernelEmulator.get();
    if (emulator == null) {
      throw new IllegalStateException(KernelEmulator.unavailableReason());
    }
  }

  /** Null when the emulation can run here, else what is missing. */
  public static String unavailableReason() {
    return KernelEmulator.get() == null ? KernelEmulator.unavailableReason() : null;
  }

  /** One emulated GPU per instance. */
  @Override
  public String id() {
    return "emulated-gpu-" + System.identityHashCode(this);
  }

  @Override
  public void makeCurrent() {}

  @Override
  public long allocate(long bytes) {
    Arena arena = Arena.ofShared();
    long address = arena.allocate(bytes, 256).address();
    allocations.put(address, arena);
    return address;
  }

  @Override
  public void free(long address) {
    Arena arena = allocations.remove(address);
    if (arena == null) {
      throw new IllegalStateException("freed device memory at 0x" + Long.toHexString(address) + " twice or never allocated it");
    }
    arena.close();
  }

  /** Device allocations not yet freed. */
  public int liveAllocations() {
    return allocations.size();
  }

  @Override
  public void copyToDevice(long to, MemorySegment host) {
    notCapturing("a copy");
    MemorySegment.ofAddress(to).reinterpret(host.byteSize()).copyFrom(host);
  }

  @Override
  public void copyToHost(MemorySegment host, long from) {
    notCapturing("a copy");
    host.copyFrom(MemorySegment.ofAddress(from).reinterpret(host.byteSize()));
  }

  @Override
  public void zero(long at, long bytes) {
    notCapturing("a memset");
    MemorySegment.ofAddress(at).reinterpret(bytes).fill((byte) 0);
  }

  @Override
  public void launch(String name, LaunchShapes.Shape shape, Object... args) {
    Object[] converted = new Object[args.length];
    for (int i = 0; i < args.length; i++) {
      converted[i] = args[i] instanceof Gpu.Ptr p ? MemorySegment.ofAddress(p.address()) : args[i];
    }
    if (capturing != null) {
      capturing.add(() -> emulator.launch(name, shape, converted)); // the arguments as they are now, as CUDA records them
    } else {
      emulator.launch(name, shape, converted);
    }
  }

  private void notCapturing(String what) {
    if (capturing != null) {
      throw new IllegalStateException(what + " while capturing a graph (CUDA refuses it)");
    }
  }

  @Override
  public void beginCapture() {
    notCapturing("beginCapture");
    capturing = new ArrayList<>();
  }

  @Override
  public Graph endCapture() {
    if (capturing == null) {
      throw new IllegalStateException("endCapture without beginCapture");
    }
    List<Runnable> launches = List.copyOf(capturing);
    capturing = null;
    return new Graph() {
      private boolean closed;

      @Override
      public void launch() {
        if (closed) {
          throw new IllegalStateException("graph launched after close");
        }
        notCapturing("a graph launch");
        graphLaunches++;
        launches.forEach(Runnable::run);
      }

      @Override
      public void close() {
        closed = true;
      }
    };
  }

  @Override
  public Event record() {
    notCapturing("an event");
    long at = System.nanoTime(); // everything before it has already run
    return new TimedEvent(at);
  }

  /** An event of the emulation: the moment it was recorded. */
  private record TimedEvent(long nanos) implements Event {
    @Override
    public double millisSince(Event earlier) {
      return (nanos - ((TimedEvent) earlier).nanos) / 1e6;
    }

    @Override
    public void close() {}
  }

  /** Graph launches so far (each replays its recorded kernels). */
  public int graphLaunches() {
    return graphLaunches;
  }

  @Override
  public void synchronize() {
    notCapturing("a synchronisation");
  }

  @Override
  public long mapHost(MemorySegment host) {
    if (mapped.putIfAbsent(host.address(), 1) != null) {
      throw new IllegalStateException("host memory at 0x" + Long.toHexString(host.address()) + " mapped twice");
    }
    return host.address();
  }

  @Override
  public void unmapHost(MemorySegment host) {
    if (mapped.remove(host.address()) == null) {
      throw new IllegalStateException("host memory at 0x" + Long.toHexString(host.address()) + " was not mapped");
    }
  }

  /** Host ranges mapped and not yet unmapped. */
  public int mappedRanges() {
    return mapped.size();
  }

  @Override
  public MemorySegment allocatePinned(long bytes) {
    long address = allocate(bytes);
    return MemorySegment.ofAddress(address).reinterpret(bytes);
  }

  @Override
  public void freePinned(MemorySegment pinned) {
    free(pinned.address());
  }

  @Override
  public void close() {}
}
