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
 *   <li>{@code widen-only}: widening and two adds, no activations;
 *   <li>{@code kernel-touch}: the kernel with one plain int load per 64 bytes, {@code
 *       -Dtouch=BYTES} (default 2,048) ahead of the vector loads — a prefetch by hand, since the
 *       Vector API has none;
 *   <li>{@code pairs-touch}: the same, two rows a pass sharing each activation load;
 *   <li>{@code blocked-touch}: the rows in column blocks of {@code -DblockCols} (default 2,048), each
 *       block over a group of {@code -DgroupRows} rows (default all of a job's), touching the next
 *       row's block;
 *   <li>{@code small-x}: the kernel with its activations read from the first 2,048 only (wrong
 *       values): what a long row's activations leaving L1 cost;
 *   <li>{@code bf16-x}: {@code kernel-touch} with the activations rounded to bf16 and packed two to
 *       an int as the weights are (half the bytes in L1), both widened the same way.
 * </ul>
 *
 * <p>Each kind's passes alternate with the others' ({@code -Dreps=N} of each, default 4; {@code
 * -Dkinds=a,b} picks kinds); best and median are printed. {@code -Dcols=N} sets the row length (default 1,024); {@code -Dfile=PATH} maps the first 1,200
 * MB of a file (a model's safetensors, in the page cache) instead of filling anonymous memory.
 *
 * <pre>java --add-modules jdk.incubator.vector ... dev.tandem.bench.MatvecLoadCost [threads]</pre>
 */
public final class MatvecLoadCost {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = F.length();
  private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  private static final int COLS = Integer.getInteger("cols", 1024);
  private static final long BYTES = 1200L << 20;
  private static final int JOB_ROWS = (4 << 20) / (COLS * 2); // 4 MB of weights per parallel job
  private static final String[] KINDS = {"read", "kernel", "kernel-touch", "pairs-touch", "blocked-touch", "small-x", "bf16-x", "fma-only", "widen-only"};
  private static final long TOUCH = Long.getLong("touch", 2048);
  private static final int BLOCK_COLS = Integer.getInteger("blockCols", 2048);
  private static final int GROUP_ROWS = Integer.getInteger("groupRows", Integer.MAX_VALUE);
  private static final boolean BLOCK_TOUCH = Boolean.parseBoolean(System.getProperty("blockTouch", "true"));

  private MatvecLoadCost() {}

  public static void main(String[] args) throws Exception {
    int threads = args.length > 0 ? Integer.parseInt(args[0]) : Runtime.getRuntime().availableProcessors();
    MemorySegment weights;
    String file = System.getProperty("file");
    if (file != null) { // a model's weights as the engine reads them: a file mapped in 4 KB pages
      try (var channel = java.nio.channels.FileChannel.open(java.nio.file.Path.of(file))) {
        weights = channel.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, 0, BYTES, Arena.global());
      }
      System.out.printf(Locale.ROOT, "mapped the first %d MB of %s%n", BYTES >> 20, file);
    } else {
      weights = Arena.global().allocate(BYTES, 64);
      SplittableRandom random = new SplittableRandom(1);
      System.out.printf(Locale.ROOT, "filling %d MB of bf16 weights...%n", BYTES >> 20);
      for (long o = 0; o < BYTES; o += 2) {
        float v = (float) (random.nextGaussian() * 0.02);
        weights.set(ValueLayout.JAVA_SHORT_UNALIGNED, o, (short) (Float.floatToRawIntBits(v) >>> 16));
      }
    }
    System.out.printf(Locale.ROOT, "%d threads, %d-bit vectors, rows of %d bf16 weights, jobs of %d MB%n",
        threads, F.vectorBitSize(), COLS, JOB_ROWS * COLS * 2 >> 20);
    String[] kinds = System.getProperty("kinds", String.join(",", KINDS)).split(",");
    int reps = Integer.getInteger("reps", 4);
    for (boolean cached : new boolean[] {false, true}) {
      // Kinds interleaved pass by pass, so that the machine's drift (a shared VM) falls on all alike.
      double[][] rates = new double[kinds.length][reps];
      for (int rep = 0; rep < reps; rep++) {
        for (int k = 0; k < kinds.length; k++) {
          rates[k][rep] = pass(weights, kinds[k], threads, cached);
        }
      }
      for (int k = 0; k < kinds.length; k++) {
        double[] r = rates[k].clone();
        java.util.Arrays.sort(r);
        System.out.printf(Locale.ROOT, "%-10s %-12s best %6.1f GB/s, median %6.1f%n",
            cached ? "from L2" : "from memory", kinds[k], r[reps - 1], r[reps / 2]);
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
        int[] xPairs = new int[COLS / 2];
        for (int k = 0; k < COLS / 2; k++) {
          xPairs[k] = (Float.floatToRawIntBits(x[2 * k + 1]) & 0xffff0000) | (Float.floatToRawIntBits(x[2 * k]) >>> 16);
        }
        float[] out = new float[JOB_ROWS];
        int share = JOB_ROWS / threads;
        for (int job = 0, round = 1; job + JOB_ROWS <= rows; job += JOB_ROWS, round++) {
          if (kind.equals("blocked-touch")) { // column blocks of BLOCK_COLS, each over all the share's rows
            int first = job + index * share;
            java.util.Arrays.fill(out, 0f);
            for (int g = first, gEnd; g < first + share; g = gEnd) {
              gEnd = (int) Math.min(first + share, (long) g + GROUP_ROWS); // the default group, every row, must not overflow
              for (int c = 0; c < COLS; c += BLOCK_COLS) {
                int n = Math.min(BLOCK_COLS, COLS - c);
                for (int r = g; r < gEnd; r++) {
                  long from = (long) (cached ? r & 255 : r) * COLS * 2 + c * 2L;
                  out[r - job] += BLOCK_TOUCH ? blockTouch(x, c, n, weights, from, (long) COLS * 2) : blockPlain(x, c, n, weights, from);
                }
              }
            }
            arrived.incrementAndGet();
            while (arrived.get() < round * threads) {
              Thread.onSpinWait();
            }
            continue;
          }
          for (int r = job + index * share, end = r + share; r < end; r++) {
            long from = (long) (cached ? r & 255 : r) * COLS * 2;
            if (kind.equals("pairs-touch") && r + 1 < end) { // two rows a pass
              long next = (long) (cached ? (r + 1) & 255 : r + 1) * COLS * 2;
              pairTouch(x, weights, from, next, out, r - job);
              r++;
              continue;
            }
            out[r - job] = kind.equals("bf16-x") ? bf16X(xPairs, weights, from) : row(kind, x, weights, from);
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
      case "kernel-touch" -> kernelTouch(x, w, from);
      case "small-x" -> smallX(x, w, from);
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

  /** The CPU backend's batch-1 loop over a whole row. */
  private static float kernel(float[] x, MemorySegment w, long from) {
    return blockPlain(x, 0, COLS, w, from);
  }

  private static float kernelTouch(float[] x, MemorySegment w, long from) {
    return blockTouch(x, 0, COLS, w, from, TOUCH);
  }

  /** Columns [c, c + n) of one row: the CPU backend's batch-1 loop ({@code VectorBackend.dotHalfPairs}) for bf16. */
  private static float blockPlain(float[] x, int c, int n, MemorySegment w, long from) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    for (int i = 0; i < n; i += 2 * L) {
      IntVector pair = IntVector.fromMemorySegment(I, w, from + i * 2L, LE);
      a0 = FloatVector.fromArray(F, x, c + i).fma(pair.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats(), a0);
      a1 = FloatVector.fromArray(F, x, c + i + L).fma(pair.and(0xffff0000).reinterpretAsFloats(), a1);
    }
    return a0.add(a1).reduceLanes(VectorOperators.ADD);
  }

  /** Columns [c, c + n) of one row, touching {@code stride} bytes on as it goes (the next row's same columns, in blocks). */
  private static float blockTouch(float[] x, int c, int n, MemorySegment w, long from, long stride) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    long last = w.byteSize() - 4;
    int touched = 0;
    for (int i = 0; i < n; i += 2 * L) {
      touched ^= w.get(ValueLayout.JAVA_INT_UNALIGNED, Math.min(from + i * 2L + stride, last));
      IntVector pair = IntVector.fromMemorySegment(I, w, from + i * 2L, LE);
      a0 = FloatVector.fromArray(F, x, c + i).fma(pair.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats(), a0);
      a1 = FloatVector.fromArray(F, x, c + i + L).fma(pair.and(0xffff0000).reinterpretAsFloats(), a1);
    }
    return a0.add(a1).reduceLanes(VectorOperators.ADD) + (touched == 0x7fc00001 ? 1e-30f : 0f);
  }

  /** {@code kernel-touch} over activations packed as bf16 pairs: both sides widened alike. */
  private static float bf16X(int[] xPairs, MemorySegment w, long from) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    long last = w.byteSize() - 4;
    int touched = 0;
    for (int i = 0; i < COLS; i += 2 * L) {
      touched ^= w.get(ValueLayout.JAVA_INT_UNALIGNED, Math.min(from + i * 2L + TOUCH, last));
      IntVector pair = IntVector.fromMemorySegment(I, w, from + i * 2L, LE);
      IntVector xp = IntVector.fromArray(I, xPairs, i / 2);
      a0 = xp.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(pair.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats(), a0);
      a1 = xp.and(0xffff0000).reinterpretAsFloats().fma(pair.and(0xffff0000).reinterpretAsFloats(), a1);
    }
    return a0.add(a1).reduceLanes(VectorOperators.ADD) + (touched == 0x7fc00001 ? 1e-30f : 0f);
  }

  /** Two rows a pass: each activation load serves both, each row touched ahead. */
  private static void pairTouch(float[] x, MemorySegment w, long from0, long from1, float[] out, int at) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector b0 = FloatVector.zero(F);
    FloatVector b1 = FloatVector.zero(F);
    long last = w.byteSize() - 4;
    int touched = 0;
    for (int i = 0; i < COLS; i += 2 * L) {
      touched ^= w.get(ValueLayout.JAVA_INT_UNALIGNED, Math.min(from0 + i * 2L + TOUCH, last));
      touched ^= w.get(ValueLayout.JAVA_INT_UNALIGNED, Math.min(from1 + i * 2L + TOUCH, last));
      IntVector p = IntVector.fromMemorySegment(I, w, from0 + i * 2L, LE);
      IntVector q = IntVector.fromMemorySegment(I, w, from1 + i * 2L, LE);
      FloatVector xe = FloatVector.fromArray(F, x, i);
      FloatVector xo = FloatVector.fromArray(F, x, i + L);
      a0 = xe.fma(p.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats(), a0);
      a1 = xo.fma(p.and(0xffff0000).reinterpretAsFloats(), a1);
      b0 = xe.fma(q.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats(), b0);
      b1 = xo.fma(q.and(0xffff0000).reinterpretAsFloats(), b1);
    }
    out[at] = a0.add(a1).reduceLanes(VectorOperators.ADD) + (touched == 0x7fc00001 ? 1e-30f : 0f);
    out[at + 1] = b0.add(b1).reduceLanes(VectorOperators.ADD);
  }

  /** The kernel with activations from the first 2,048 only (wrong values): whether a long row's activations leaving L1 is what costs. */
  private static float smallX(float[] x, MemorySegment w, long from) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    for (int i = 0; i < COLS; i += 2 * L) {
      IntVector pair = IntVector.fromMemorySegment(I, w, from + i * 2L, LE);
      int xi = i & 2047;
      a0 = FloatVector.fromArray(F, x, xi).fma(pair.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats(), a0);
      a1 = FloatVector.fromArray(F, x, xi + L).fma(pair.and(0xffff0000).reinterpretAsFloats(), a1);
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
