package dev.tandem.transfer;

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
    try (TransferAgent.Landing landing = reader.landing(Math.max(largest, 4096))) {
      MemorySegment local = landing.segment();
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
        Timing t = time(size >= (64L << 20) ? 5 : 20, budgetSeconds,
            () -> read(reader, region.slice(0, size), local.asSlice(0, size)));
        throughput.add(new Throughput(size, size / t.bestSeconds()));
        if (t.firstSeconds() > 1.0) {
          break;
        }
      }
      return new Result(reader.backend(), small[small.length / 2], List.copyOf(throughput));
    }
  }

  /** A pull's cost as a line: {@code fixedSeconds + bytes / bytesPerSecond}. */
  public record PullCost(String backend, double fixedSeconds, double bytesPerSecond) {
    public double seconds(double bytes) {
      return fixedSeconds + bytes / bytesPerSecond;
    }

    /**
     * The line through a pull of {@code small} bytes in {@code tSmall} seconds and one of {@code
     * large} (16× as many) in {@code tLarge}. When the large pull took less than 1.5× the small
     * one, the two do not make a line (a stall or a retransmission timeout in the small one; a
     * slope from them read as gigabytes per second on a 16 Mbit/s link): then the large pull's own
     * average, fixed cost included, with no fixed part — what that pull did take, so a larger one is
     * not predicted faster.
     */
    public static PullCost fit(String backend, long small, double tSmall, long large, double tLarge) {
      if (tLarge < 1.5 * tSmall) {
        return new PullCost(backend, 0, large / tLarge);
      }
      double bytesPerSecond = (large - small) / (tLarge - tSmall);
      return new PullCost(backend, Math.max(0, tSmall - small / bytesPerSecond), bytesPerSecond);
    }
  }

  /**
   * Measures transfers shaped like a KV pull — {@code reads} reads in flight at once (one per
   * layer), each of two descriptors (keys and values) — at a small and a large total size, best of
   * several, and fits a line: the intercept is what every pull costs regardless of size, the slope
   * the link's throughput as a pull sees it. The large size is what the link moves in about two
   * seconds (a first 1 MiB pull tells), at most the region and 64 MiB, pulled three times or more
   * (best kept); the small one a sixteenth of it. So a fast link is measured with 64 MiB pulls, and
   * a 10 Mbit/s one in about ten seconds, not minutes.
   */
  public static PullCost pullShaped(TransferAgent reader, MemoryDescriptor region, int reads, double budgetSeconds) throws Exception {
    long cap = Math.min(region.length(), 64L << 20);
    long unit = 2L * reads * 64; // every descriptor a multiple of 64 bytes
    long first = roundDown(Math.min(cap / 16, 1L << 20), unit);
    if (first == 0) {
      throw new IllegalArgumentException("region of " + region.length() + " bytes is too small to probe " + reads + " reads");
    }
    try (TransferAgent.Landing landing = reader.landing(cap)) {
      MemorySegment local = landing.segment();
      bestPull(reader, region, local, first, reads, budgetSeconds); // warm-up: connections, buffers, JIT
      double guess = first / bestPull(reader, region, local, first, reads, budgetSeconds);
      long large = roundDown((long) Math.max(16.0 * unit, Math.min(cap, guess * 2.0)), unit);
      long small = Math.max(unit, roundDown(large / 16, unit));
      double tSmall = bestPull(reader, region, local, small, reads, budgetSeconds);
      // At least three large pulls: on a slow, shaped link one lost segment (a TCP retransmission
      // timeout) can halve a single two-second measurement.
      double tLarge = bestPull(reader, region, local, large, reads, Math.max(budgetSeconds, 6.0));
      return PullCost.fit(reader.backend(), small, tSmall, large, tLarge);
    }
  }

  private static long roundDown(long bytes, long unit) {
    return bytes - bytes % unit;
  }

  private static double bestPull(
      TransferAgent reader, MemoryDescriptor region, MemorySegment local, long bytes, int reads, double budgetSeconds)
      throws Exception {
    long part = bytes / (2L * reads);
    return time(20, budgetSeconds, () -> {
          List<java.util.concurrent.CompletableFuture<Void>> inFlight = new ArrayList<>();
          for (int r = 0; r < reads; r++) {
            long offset = 2L * r * part;
            inFlight.add(reader.read(
                List.of(region.slice(offset, part), region.slice(offset + part, part)),
                List.of(local.asSlice(offset, part), local.asSlice(offset + part, part)),
                Duration.ofSeconds(60), null));
          }
          java.util.concurrent.CompletableFuture.allOf(inFlight.toArray(java.util.concurrent.CompletableFuture[]::new))
              .get(60, TimeUnit.SECONDS);
        })
        .bestSeconds();
  }

  private interface Transfer {
    void run() throws Exception;
  }

  /** The first (warm-up) run's time and the best of the timed runs after it. */
  private record Timing(double firstSeconds, double bestSeconds) {}

  /**
   * Runs {@code transfer} once to warm up, then up to {@code maxReps} more times within about
   * {@code budgetSeconds} (at least two); a warm-up longer than the whole budget is the only
   * measurement.
   */
  private static Timing time(int maxReps, double budgetSeconds, Transfer transfer) throws Exception {
    long t0 = System.nanoTime();
    transfer.run();
    double first = (System.nanoTime() - t0) / 1e9;
    if (first > budgetSeconds) {
      return new Timing(first, first);
    }
    int reps = (int) Math.max(2, Math.min(maxReps, budgetSeconds / Math.max(first, 1e-9)));
    double best = Double.MAX_VALUE;
    for (int i = 0; i < reps; i++) {
      long t = System.nanoTime();
      transfer.run();
      best = Math.min(best, (System.nanoTime() - t) / 1e9);
    }
    return new Timing(first, best);
  }

  private static void read(TransferAgent reader, MemoryDescriptor d, MemorySegment into) throws Exception {
    reader.read(List.of(d), List.of(into), Duration.ofSeconds(60), null).get(60, TimeUnit.SECONDS);
  }
}
