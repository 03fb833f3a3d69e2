package dev.tandem.transfer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Measures a link the way KV moves over it: reads of a peer's registered region by this agent,
 * small ones for latency and large ones for throughput. Plain values out, for the CLI and, later,
 * for workers to report to the router.
 */
public final class LinkProbe {
  /** One measured read size: best throughput over the repetitions. */
  public record Throughput(long bytes, double bytesPerSecond) {}

  /** Median latency of a 4 KiB read, and throughput per size. */
  public record Result(String backend, double latencySeconds, List<Throughput> throughput) {
    /** Throughput measured at the largest size not above {@code bytes} (the smallest if none). */
    public double bytesPerSecondAt(long bytes) {
      Throughput pick = throughput.getFirst();
      for (Throughput t : throughput) {
        if (t.bytes() <= bytes) {
          pick = t;
        }
      }
      return pick.bytesPerSecond();
    }

    /** Seconds to move {@code bytes} in one read: latency plus bytes at the matching throughput. */
    public double secondsToMove(long bytes) {
      return latencySeconds + bytes / bytesPerSecondAt(bytes);
    }
  }

  private LinkProbe() {}

  /**
   * Probes {@code region} (a peer's registered memory) through {@code reader}.
   *
   * @param sizes read sizes for throughput, each at most the region's length
   */
  public static Result run(TransferAgent reader, MemoryDescriptor region, long[] sizes) throws Exception {
    return run(reader, region, sizes, Double.MAX_VALUE);
  }

  /**
   * As {@link #run(TransferAgent, MemoryDescriptor, long[])}, spending about {@code budgetSeconds}
   * on each size (a warm-up read, then at least two more unless the warm-up alone took longer than
   * the budget) and skipping the larger sizes once one read takes more than a second, so that a
   * slow link is measured in seconds.
   */
  public static Result run(TransferAgent reader, MemoryDescriptor region, long[] sizes, double budgetSeconds) throws Exception {
    long largest = Arrays.stream(sizes).max().orElse(4096);
    if (largest > region.length()) {
      throw new IllegalArgumentException("the peer's region holds " + region.length() + " bytes; cannot probe " + largest);
    }
    try (Arena arena = Arena.ofShared()) {
      MemorySegment local = arena.allocate(Math.max(largest, 4096), 64);
      // Latency: median of 4 KiB reads, after a warm-up.
      double[] small = new double[200];
      for (int i = -20; i < small.length; i++) {
        long t0 = System.nanoTime();
        read(reader, region.slice(0, 4096), local.asSlice(0, 4096));
        if (i >= 0) {
          small[i] = (System.nanoTime() - t0) / 1e9;
        }
      }
      Arrays.sort(small);
      List<Throughput> throughput = new ArrayList<>();
      for (long size : sizes) {
        int reps = size >= (64L << 20) ? 5 : 20;
        double best = 0;
        double first = 0;
        for (int i = 0; i < reps + 1; i++) {
          long t0 = System.nanoTime();
          read(reader, region.slice(0, size), local.asSlice(0, size));
          double seconds = (System.nanoTime() - t0) / 1e9;
          if (i == 0) {
            first = seconds;
            // The first read warms up; a read longer than the whole budget is measurement enough.
            reps = seconds > budgetSeconds ? 0 : (int) Math.max(2, Math.min(reps, budgetSeconds / Math.max(seconds, 1e-9)));
            if (reps == 0) {
              best = size / seconds;
            }
          } else {
            best = Math.max(best, size / seconds);
          }
        }
        throughput.add(new Throughput(size, best));
        if (first > 1.0) {
          break;
        }
      }
      return new Result(reader.backend(), small[small.length / 2], List.copyOf(throughput));
    }
  }

  private static void read(TransferAgent reader, MemoryDescriptor d, MemorySegment into) throws Exception {
    reader.read(List.of(d), List.of(into), Duration.ofSeconds(60), null).get(60, TimeUnit.SECONDS);
  }
}
