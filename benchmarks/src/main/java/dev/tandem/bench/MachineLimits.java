package dev.tandem.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The machine's own limits, measured in the same run as what they bound: memory read bandwidth
 * (every thread summing its share of a buffer far larger than the caches) and peak f32 FMA rate
 * (independent accumulators kept in registers). Best of several repetitions.
 */
public final class MachineLimits {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;

  private MachineLimits() {}

  /** Bytes per second read from memory by {@code threads} threads. */
  public static double readBandwidth(int threads, long bytes, int repetitions) throws Exception {
    try (Arena arena = Arena.ofShared()) {
      MemorySegment buf = arena.allocate(bytes, 64);
      buf.fill((byte) 1);
      long share = bytes / threads / F.vectorByteSize() * F.vectorByteSize();
      double seconds = bestSeconds(threads, repetitions, t -> sum(buf, t * share, share));
      return share * threads / seconds;
    }
  }

  private static float sum(MemorySegment buf, long from, long length) {
    FloatVector a = FloatVector.zero(F);
    FloatVector b = FloatVector.zero(F);
    long step = F.vectorByteSize();
    long end = from + length - 2 * step;
    long i = from;
    for (; i <= end; i += 2 * step) {
      a = a.add(FloatVector.fromMemorySegment(F, buf, i, ByteOrder.LITTLE_ENDIAN));
      b = b.add(FloatVector.fromMemorySegment(F, buf, i + step, ByteOrder.LITTLE_ENDIAN));
    }
    return a.add(b).reduceLanes(VectorOperators.ADD);
  }

  /** f32 FLOP/s (an FMA counts two) on {@code threads} threads. */
  public static double peakFlops(int threads, int repetitions) throws Exception {
    long iterations = 20_000_000;
    double seconds = bestSeconds(threads, repetitions, t -> fmaLoop(iterations));
    return 2.0 * 8 * F.length() * iterations * threads / seconds;
  }

  /** One job per thread ({@code job.apply(threadIndex)}), all at once; the fastest repetition's seconds. */
  private static double bestSeconds(int threads, int repetitions, java.util.function.IntFunction<Float> job)
      throws Exception {
    try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
      double best = Double.MAX_VALUE;
      for (int rep = 0; rep < repetitions; rep++) {
        List<Callable<Float>> jobs = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int index = t;
          jobs.add(() -> job.apply(index));
        }
        long start = System.nanoTime();
        float sink = 0;
        for (Future<Float> f : pool.invokeAll(jobs)) {
          sink += f.get();
        }
        best = Math.min(best, (System.nanoTime() - start) / 1e9);
        if (sink == 42) {
          System.out.print(""); // keeps the results alive
        }
      }
      return best;
    }
  }

  private static float fmaLoop(long iterations) {
    FloatVector m = FloatVector.broadcast(F, 0.9999f);
    FloatVector c = FloatVector.broadcast(F, 1e-7f);
    FloatVector a0 = FloatVector.broadcast(F, 1f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (long i = 0; i < iterations; i++) {
      a0 = a0.fma(m, c);
      a1 = a1.fma(m, c);
      a2 = a2.fma(m, c);
      a3 = a3.fma(m, c);
      a4 = a4.fma(m, c);
      a5 = a5.fma(m, c);
      a6 = a6.fma(m, c);
      a7 = a7.fma(m, c);
    }
    return a0.add(a1).add(a2).add(a3).add(a4).add(a5).add(a6).add(a7).reduceLanes(VectorOperators.ADD);
  }
}
