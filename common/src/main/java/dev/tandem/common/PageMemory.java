package dev.tandem.common;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * Large native regions (a KV cache, a transfer agent's memory) as whole zeroed pages that the
 * kernel supplies on first touch: an anonymous {@code mmap}. {@link Arena#allocate} zeroes every
 * byte itself before returning, which faults in every page up front — 2.6 s for 1 GiB on a 2-vCPU
 * VM, paid again by each region a worker allocates at start-up, for memory that mostly waits
 * empty. Where {@code mmap} is not available (not Linux), falls back to {@link Arena#allocate}.
 */
public final class PageMemory {
  private static final int PROT_READ_WRITE = 0x1 | 0x2;
  private static final int MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20;
  private static final long MAP_FAILED = -1L;
  private static final long PAGE = 4096;
  private static final Optional<MethodHandle> MMAP = handle("mmap",
      FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT,
          ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
  private static final Optional<MethodHandle> MUNMAP = handle("munmap",
      FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
  /** Linux's flag values above, and both calls found. */
  private static final boolean MAPS = System.getProperty("os.name", "").startsWith("Linux") && MMAP.isPresent() && MUNMAP.isPresent();

  private PageMemory() {}

  /**
   * {@code bytes} of zeroed memory starting on a page boundary, freed when {@code arena} closes.
   *
   * @throws OutOfMemoryError when the kernel refuses the mapping
   */
  public static MemorySegment allocate(Arena arena, long bytes) {
    if (bytes <= 0 || !MAPS) {
      return arena.allocate(Math.max(bytes, 0), PAGE);
    }
    long address = mmap(bytes);
    return MemorySegment.ofAddress(address).reinterpret(bytes, arena, s -> munmap(address, bytes));
  }

  private static long mmap(long bytes) {
    long address;
    try {
      address = (long) MMAP.get().invokeExact(0L, bytes, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0L);
    } catch (Throwable t) {
      throw new IllegalStateException("mmap of " + bytes + " bytes failed", t);
    }
    if (address == MAP_FAILED || address == 0) {
      throw new OutOfMemoryError("mmap refused " + bytes + " bytes of anonymous memory");
    }
    return address;
  }

  private static void munmap(long address, long bytes) {
    try {
      int rc = (int) MUNMAP.get().invokeExact(address, bytes);
      if (rc != 0) {
        throw new IllegalStateException("munmap of " + bytes + " bytes at 0x" + Long.toHexString(address) + " failed");
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  private static Optional<MethodHandle> handle(String name, FunctionDescriptor descriptor) {
    Linker linker = Linker.nativeLinker();
    return linker.defaultLookup().find(name).map(symbol -> linker.downcallHandle(symbol, descriptor));
  }
}
