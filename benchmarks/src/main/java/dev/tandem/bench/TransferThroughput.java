package dev.tandem.bench;

import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.local.LocalTransferAgent;
import dev.tandem.transfer.tcp.TcpTransferAgent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Transfer throughput per backend next to the limit of its link: {@code local} against a plain
 * memory copy of the same size, measured in the same run; {@code ucx}'s is ucx_perftest's
 * ucp_get between two processes (the script runs it), for memory the agent allocated (as workers'
 * KV caches are, read into memory the reader's agent allocated), registered process memory ({@code
 * ucx-reg}) and peer-error mode ({@code ucx-err}, what peers on other nodes get), and for small
 * reads also with the caller polling the future instead of blocking ({@code ucx-poll}); {@code tcp}'s limit is the loopback
 * throughput iperf3 measures, which {@code benchmarks/scripts/transfer_throughput.sh} runs
 * before and after. Reports the best of several repetitions.
 *
 * <p>Run: {@code java -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
 * dev.tandem.bench.TransferThroughput}
 */
public final class TransferThroughput {
  private TransferThroughput() {}

  public static void main(String[] args) throws Exception {
    long[] sizes = {1L << 20, 16L << 20, 64L << 20, 256L << 20};
    try (Arena arena = Arena.ofShared()) {
      MemorySegment src = arena.allocate(256L << 20, 64);
      MemorySegment dst = arena.allocate(256L << 20, 64);
      src.fill((byte) 7);
      System.out.printf(Locale.ROOT, "%-8s %10s %14s %14s %8s%n", "backend", "size", "agent GB/s", "limit GB/s", "ratio");
      try (LocalTransferAgent a = new LocalTransferAgent(); LocalTransferAgent b = new LocalTransferAgent()) {
        for (long size : sizes) {
          double limit = best(() -> MemorySegment.copy(src, 0, dst, 0, size), size);
          double agent = best(() -> read(b, a.register(src.asSlice(0, size)), dst.asSlice(0, size)), size);
          line("local", size, agent, limit);
        }
      }
      try (TcpTransferAgent a = new TcpTransferAgent("127.0.0.1"); TcpTransferAgent b = new TcpTransferAgent("127.0.0.1")) {
        for (long size : sizes) {
          MemoryDescriptor d = a.register(src.asSlice(0, size));
          double agent = best(() -> read(b, d, dst.asSlice(0, size)), size);
          System.out.printf(Locale.ROOT, "%-8s %9dM %14.2f %14s%n", "tcp", size >> 20, agent, "(iperf3)");
        }
      }
      var ucx = new dev.tandem.transfer.ucx.UcxBackendProvider();
      if (!ucx.isAvailable()) {
        System.out.println("ucx: " + ucx.unavailableReason());
        return;
      }
      // Memory the agent allocated (what workers register their KV cache as), then memory the
      // process allocated and registered, over shared memory (peers on one node); then peer-error
      // mode (what peers on other nodes get).
      Map<Long, Double> perftest = perftestLimits(System.getenv("TANDEM_UCX_PERFTEST"));
      String[] names = {"ucx", "ucx-reg", "ucx-err"};
      for (int variant = 0; variant < names.length; variant++) {
        String name = names[variant];
        try (var a = new dev.tandem.transfer.ucx.UcxTransferAgent("127.0.0.1", variant < 2);
            var b = new dev.tandem.transfer.ucx.UcxTransferAgent("127.0.0.1", variant < 2)) {
          MemoryDescriptor allocated = null;
          MemorySegment into = dst;
          if (variant != 1) {
            var memory = a.allocate(256L << 20);
            memory.segment().fill((byte) 7);
            allocated = memory.descriptor();
            into = b.allocate(256L << 20).segment(); // as a decode worker reads into its own KV cache
          }
          for (long size : sizes) {
            MemoryDescriptor d = allocated != null ? allocated.slice(0, size) : a.register(src.asSlice(0, size));
            MemorySegment target = into.asSlice(0, size);
            double agent = best(() -> read(b, d, target), size);
            ucxLine(name, size, agent, perftest.get(size >> 20));
            if (variant == 0 && size <= (16L << 20)) {
              // The same reads with the caller polling the future, as ucx_perftest polls its worker:
              // what is left of a small read's cost once the blocked caller's wake-up is taken out.
              ucxLine("ucx-poll", size, best(() -> readPolling(b, d, target), size), perftest.get(size >> 20));
            }
          }
        }
      }
    }
  }

  /** ucx_perftest's figures as the script passes them: {@code "1:30.12,16:13.43"} (MiB:GB/s). */
  static Map<Long, Double> perftestLimits(String spec) {
    Map<Long, Double> limits = new java.util.HashMap<>();
    if (spec != null && !spec.isBlank()) {
      for (String pair : spec.split(",")) {
        String[] p = pair.split(":");
        limits.put(Long.parseLong(p[0].trim()), Double.parseDouble(p[1].trim()));
      }
    }
    return limits;
  }

  private interface Run {
    void run() throws Exception;
  }

  private static void read(TransferAgent reader, MemoryDescriptor d, MemorySegment into) throws Exception {
    reader.read(List.of(d), List.of(into), Duration.ofSeconds(60), null).get(60, TimeUnit.SECONDS);
  }

  private static void readPolling(TransferAgent reader, MemoryDescriptor d, MemorySegment into) throws Exception {
    var read = reader.read(List.of(d), List.of(into), Duration.ofSeconds(60), null);
    while (!read.isDone()) {
      Thread.onSpinWait();
    }
    read.get();
  }

  private static void ucxLine(String name, long size, double agent, Double limit) {
    if (limit == null) {
      System.out.printf(Locale.ROOT, "%-8s %9dM %14.2f %14s%n", name, size >> 20, agent, "(ucx_perftest)");
    } else {
      line(name, size, agent, limit);
    }
  }

  private static double best(Run run, long bytes) throws Exception {
    double best = 0;
    int reps = bytes >= (64L << 20) ? 6 : 30;
    for (int i = 0; i < reps; i++) {
      long t0 = System.nanoTime();
      run.run();
      best = Math.max(best, bytes / ((System.nanoTime() - t0) / 1e9) / 1e9);
    }
    return best;
  }

  private static void line(String backend, long size, double agent, double limit) {
    System.out.printf(Locale.ROOT, "%-8s %9dM %14.2f %14.2f %7.0f%%%n", backend, size >> 20, agent, limit, 100 * agent / limit);
  }
}
