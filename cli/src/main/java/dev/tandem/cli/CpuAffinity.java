package dev.tandem.cli;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * Pins the calling thread to a set of CPUs (Linux {@code sched_setaffinity}), so that threads it
 * creates afterwards — an engine's compute helpers and loop — inherit the set. {@code tandem serve
 * --mode disagg} gives prefill and decode workers disjoint CPUs this way, as {@code taskset} does
 * for separate processes.
 */
final class CpuAffinity {
  private static final int CPU_SET_BYTES = 128; // glibc's cpu_set_t: 1024 CPUs

  private CpuAffinity() {}

  /** The CPUs this thread may run on now. */
  static BitSet current() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment mask = arena.allocate(CPU_SET_BYTES);
      int rc = (int) handle("sched_getaffinity").invokeExact(0, (long) CPU_SET_BYTES, mask);
      if (rc != 0) {
        throw new IllegalStateException("sched_getaffinity failed: " + rc);
      }
      return BitSet.valueOf(mask.toArray(ValueLayout.JAVA_BYTE));
    } catch (Throwable t) {
      throw new IllegalStateException("cannot read CPU affinity: " + t.getMessage(), t);
    }
  }

  /** Restricts the calling thread to {@code cpus}. */
  static void pin(BitSet cpus) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment mask = arena.allocate(CPU_SET_BYTES);
      byte[] bytes = cpus.toByteArray();
      MemorySegment.copy(bytes, 0, mask, ValueLayout.JAVA_BYTE, 0, Math.min(bytes.length, CPU_SET_BYTES));
      int rc = (int) handle("sched_setaffinity").invokeExact(0, (long) CPU_SET_BYTES, mask);
      if (rc != 0) {
        throw new IllegalStateException("sched_setaffinity failed: " + rc);
      }
    } catch (Throwable t) {
      throw new IllegalStateException("cannot pin to CPUs " + cpus + ": " + t.getMessage(), t);
    }
  }

  /** Splits {@code cpus} into {@code parts} contiguous, disjoint, non-empty shares (first shares larger). */
  static List<BitSet> split(BitSet cpus, int parts) {
    int[] ids = cpus.stream().toArray();
    if (ids.length < parts) {
      throw new IllegalArgumentException("cannot give " + parts + " workers their own CPUs: this process may use " + ids.length);
    }
    List<BitSet> out = new ArrayList<>();
    int from = 0;
    for (int p = 0; p < parts; p++) {
      int size = ids.length / parts + (p < ids.length % parts ? 1 : 0);
      BitSet share = new BitSet();
      for (int i = from; i < from + size; i++) {
        share.set(ids[i]);
      }
      out.add(share);
      from += size;
    }
    return out;
  }

  /** A CPU set as Linux writes it: "0-3,8". */
  static String format(BitSet cpus) {
    StringBuilder b = new StringBuilder();
    int i = cpus.nextSetBit(0);
    while (i >= 0) {
      int end = cpus.nextClearBit(i) - 1;
      if (!b.isEmpty()) {
        b.append(',');
      }
      b.append(i);
      if (end > i) {
        b.append('-').append(end);
      }
      i = cpus.nextSetBit(end + 1);
    }
    return b.toString();
  }

  private static MethodHandle handle(String name) {
    Linker linker = Linker.nativeLinker();
    return linker.downcallHandle(
        linker.defaultLookup().find(name).orElseThrow(() -> new UnsupportedOperationException(name + " is not available (Linux only)")),
        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
  }
}
