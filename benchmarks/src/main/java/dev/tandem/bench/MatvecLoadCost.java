package dev.tandem.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Why batch-1 decode's bf16 matrix-vector kernel streams weights slower than a plain read of the
 * same bytes: the loop bodies of the CPU backend's kernel and of three variants, each over 1,200 MB
 * of bf16 weights (values as a model's, ~N(0, 0.02)) in rows of 1,024, as the engine runs them
 * (jobs of 4 MB split over the threads, a spin barrier after each), from memory and from L2 (the
 * same 256 rows again and again). Prints GB/s for each.
 *
 * <ul>
 *   <li>{@code read}: the bytes summed as ints — the memory's limit for this access pattern;
 *   <li>{@code kernel}: the backend's loop (load, widen both halves of each int, two FMAs);
 *   <li>{@code fma-only}: the same loop without widening (the ints taken as floats: wrong values,
 *       the cost of loads and FMAs alone);
 *   <li>{@code widen-only}: widening and two adds, no activations.
 * </ul>
 *
 * <pre>java --add-modules jdk.incubator.vector ... dev.tandem.bench.MatvecLoadCost [threads]</pre>
 */
public final class MatvecLoadCost {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = F.length();
  private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  private static final int COLS = 1024;
  private static final long BYTES = 1200L << 20;
  private static final int JOB_ROWS = 2048; // 4 MB of weights per parallel job
  private static final String[] KINDS = {"read", "kernel", "fma-only", "widen-only"};

  private MatvecLoadCost() {}

  public static void main(String[] args) throws Exception {
    int threads = args.length > 0 ? Integer.parseInt(args[0]) : Runtime.getRuntime().availableProcessors();
    MemorySegment weights = Arena.global().allocate(BYTES, 64);
    SplittableRandom random = new SplittableRandom(1);
    System.out.printf(Locale.ROOT, "filling %d MB of bf16 weights...%n", BYTES >> 20);
    for (long o = 0; o < BYTES; o += 2) {
      float v = (float) (random.nextGaussian() * 0.02);
      weights.set(ValueLayout.JAVA_SHORT_UNALIGNED, o, (short) (Float.floatToRawIntBits(v) >>> 16));
    }
    System.out.printf(Locale.ROOT, "%d threads, %d-bit vectors, rows of %d bf16 weights, jobs of %d MB%n",
        threads, F.vectorBitSize(), COLS, JOB_ROWS * COLS * 2 >> 20);
    for (boolean cached : new boolean[] {false, true}) {
      for (String kind : KINDS) {
        double best = 0;
        for (int rep = 0; rep < 4; rep++) {
          best = Math.max(best, pass(weights, kind, threads, cached));
        }
        System.out.printf(Locale.ROOT, "%-10s %-12s %6.1f GB/s%n", cached ? "from L2" : "from memory", kind, best);
      }
    }
  }

  /** One pass over every job; GB/s. */
  private static double pass(MemorySegment weights, String kind, int threads, boolean cached) throws InterruptedException {
    int rows = (int) (BYTES / (COLS * 2));
    AtomicInteger arrived = new AtomicInteger();
    Thread[] workers = new Thread[threads];
    long start = System.nanoTime();
    for (int t = 0; t < threads; t++) {
      int index = t;
      workers[t] = Thread.ofPlatform().start(() -> {
        float[] x = new float[COLS];
        for (int i = 0; i < COLS; i++) {
          x[i] = (float) Math.sin(i);
        }
        float[] out = new float[JOB_ROWS];
        int share = JOB_ROWS / threads;
        for (int job = 0, round = 1; job + JOB_ROWS <= rows; job += JOB_ROWS, round++) {
          for (int r = job + index * share, end = r + share; r < end; r++) {
            long from = (long) (cached ? r & 255 : r) * COLS * 2;
            out[r - job] = row(kind, x, weights, from);
          }
          arrived.incrementAndGet();
          while (arrived.get() < round * threads) {
            Thread.onSpinWait();
          }
        }
      });
    }
    for (Thread w : workers) {
      w.join();
    }
    return (double) (rows / JOB_ROWS) * JOB_ROWS * COLS * 2 / (System.nanoTime() - start);
  }

  private static float row(String kind, float[] x, MemorySegment w, long from) {
    return switch (kind) {
      case "read" -> read(w, from);
      case "kernel" -> kernel(x, w, from);
      case "fma-only" -> fmaOnly(x, w, from);
      default -> widenOnly(w, from);
    };
  }

  private static float read(MemorySegment w, long from) {
    IntVector a = IntVector.zero(I);
    for (int i = 0; i < COLS; i += 2 * L) {
      a = a.add(IntVector.fromMemorySegment(I, w, from + i * 2L, LE));
    }
    return a.reduceLanes(VectorOperators.ADD);
  }

  /** The CPU backend's batch-1 loop ({@code VectorBackend.dotHalfPairs}) for bf16. */
  private static float kernel(float[] x, MemorySegment w, long from) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    for (int i = 0; i < COLS; i += 2 * L) {
      IntVector pair = IntVector.fromMemorySegment(I, w, from + i * 2L, LE);
      a0 = FloatVector.fromArray(F, x, i).fma(pair.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats(), a0);
      a1 = FloatVector.fromArray(F, x, i + L).fma(pair.and(0xffff0000).reinterpretAsFloats(), a1);
    }
    return a0.add(a1).reduceLanes(VectorOperators.ADD);
  }

  private static float fmaOnly(float[] x, MemorySegment w, long from) {
    FloatVector a0 = FloatVector.zero(F);
    for (int i = 0; i < COLS; i += 2 * L) {
      a0 = FloatVector.fromArray(F, x, i).fma(IntVector.fromMemorySegment(I, w, from + i * 2L, LE).reinterpretAsFloats(), a0);
    }
    return a0.reduceLanes(VectorOperators.ADD);
  }

  private static float widenOnly(MemorySegment w, long from) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    for (int i = 0; i < COLS; i += 2 * L) {
      IntVector pair = IntVector.fromMemorySegment(I, w, from + i * 2L, LE);
      a0 = a0.add(pair.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats());
      a1 = a1.add(pair.and(0xffff0000).reinterpretAsFloats());
    }
    return a0.add(a1).reduceLanes(VectorOperators.ADD);
  }
}
