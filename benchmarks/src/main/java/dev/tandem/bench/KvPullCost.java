package dev.tandem.bench;

import dev.tandem.transfer.BlockRuns;
import dev.tandem.transfer.LinkProbe;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferBackendProvider;
import dev.tandem.transfer.TransferBackends;
import dev.tandem.transfer.TransferTls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Checks the transfer term of the split decision's cost model: the time to pull a prompt's KV,
 * laid out as the built-in engine lays it out (per layer one key and one value region, one
 * descriptor per block) and read as a decode worker reads it (one read per layer, all layers in
 * flight), against the prediction the router makes from a link probe taken in the same run the way
 * a decode worker takes it ({@link LinkProbe#pullShaped}): {@code fixed + kv bytes / throughput}.
 *
 * <p>With {@code tls}, every backend that supports it runs twice: plaintext, then under mutual TLS
 * with certificates of a throwaway CA (the cost of {@code --tls-dir} on a pull).
 *
 * <pre>KvPullCost [layers kvDim [tls]]   (default 8 256: llama-100m; 28 1024: Qwen3-0.6B)</pre>
 */
public final class KvPullCost {
  private static final int BLOCK = 16;

  private KvPullCost() {}

  public static void main(String[] args) throws Exception {
    int layers = args.length > 0 ? Integer.parseInt(args[0]) : 8;
    int kvDim = args.length > 1 ? Integer.parseInt(args[1]) : 256;
    long blockBytes = (long) BLOCK * kvDim * Float.BYTES;
    long kvPerToken = 2L * layers * kvDim * Float.BYTES;
    int[] prompts = {256, 1024, 4096};
    int maxBlocks = prompts[prompts.length - 1] / BLOCK;
    System.out.printf(Locale.ROOT, "layout: %d layers, %d B per block per layer (K or V), %d B of KV per token%n", layers, blockBytes, kvPerToken);
    System.out.printf(Locale.ROOT, "%-8s %-10s %7s %6s %10s %12s %12s %8s%n", "backend", "blocks", "tokens", "descs", "MB", "measured ms", "predicted ms", "ratio");
    TransferTls tls = args.length > 2 && args[2].equals("tls") ? throwawayTls() : null;
    for (TransferBackendProvider provider : TransferBackends.all()) {
      if (!provider.isAvailable()) {
        System.out.println(provider.name() + ": " + provider.unavailableReason());
        continue;
      }
      run(provider, null, layers, kvDim, prompts);
      if (tls != null && !provider.name().equals("local")) {
        run(provider, tls, layers, kvDim, prompts);
      }
    }
    System.exit(0);
  }

  private static TransferTls throwawayTls() throws java.io.IOException {
    var ca = dev.tandem.common.CertificateAuthority.create("KvPullCost", Duration.ofDays(1));
    java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("kvpull-tls-");
    ca.writeComponent(dir, ca.issue("worker", List.of(), Duration.ofDays(1)));
    return TransferTls.of(dev.tandem.common.InternalTls.fromDirectory(dir));
  }

  private static void run(TransferBackendProvider provider, TransferTls tls, int layers, int kvDim, int[] prompts) throws Exception {
    long blockBytes = (long) BLOCK * kvDim * Float.BYTES;
    long kvPerToken = 2L * layers * kvDim * Float.BYTES;
    int maxBlocks = prompts[prompts.length - 1] / BLOCK;
    String name = provider.name() + (tls == null ? "" : "+tls");
    try (Arena arena = Arena.ofShared();
        TransferAgent prefill = provider.createAgent("127.0.0.1", 0, tls);
        TransferAgent decode = provider.createAgent("127.0.0.1", 0, tls)) {
      KvRegions kv = KvRegions.allocate(prefill, arena, layers, maxBlocks * blockBytes);
      MemoryDescriptor probeRegion = prefill.allocate(64L << 20).descriptor(); // as a worker's probe region
      // The router's figures, measured as a decode worker measures them.
      LinkProbe.PullCost link = LinkProbe.pullShaped(decode, probeRegion, layers, 0.5);
      for (String layoutName : new String[] {"contiguous", "scattered"}) {
      for (int tokens : prompts) {
        int blocks = tokens / BLOCK;
        // contiguous: as a fresh pool hands blocks out; scattered: every other block on the
        // prefill side, so that no two blocks coalesce.
        int[] src = new int[blocks];
        int[] dst = new int[blocks];
        for (int b = 0; b < blocks; b++) {
          src[b] = layoutName.equals("contiguous") ? b : (b * 2) % maxBlocks;
          dst[b] = b;
        }
        List<BlockRuns.Run> runs = BlockRuns.of(src, dst, 0);
        double best = bestPullSeconds(decode, kv, layers, blockBytes, runs, 8);
        double bytes = (double) kvPerToken * tokens;
        double predicted = link.seconds(bytes);
        System.out.printf(Locale.ROOT, "%-8s %-10s %7d %6d %10.1f %12.2f %12.2f %8.2f%n",
            name, layoutName, tokens, runs.size() * 2 * layers, bytes / 1e6, best * 1e3, predicted * 1e3, best / predicted);
      }
      }
      System.out.printf(Locale.ROOT, "%-8s probe (pull-shaped, %d reads): %.0f µs + bytes at %.2f GB/s%n",
          name, layers, link.fixedSeconds() * 1e6, link.bytesPerSecond() / 1e9);
    }
  }

  /**
   * Every layer's keys and values ({@code 2·l} and {@code 2·l + 1}) as a prefill worker holds them,
   * in memory its agent allocated, and the decode side's memory to pull them into.
   */
  record KvRegions(MemoryDescriptor[] regions, MemorySegment[] local) {
    static KvRegions allocate(TransferAgent owner, Arena arena, int layers, long bytes) {
      MemoryDescriptor[] regions = new MemoryDescriptor[2 * layers];
      MemorySegment[] local = new MemorySegment[2 * layers];
      for (int i = 0; i < regions.length; i++) {
        var memory = owner.allocate(bytes);
        memory.segment().fill((byte) i);
        regions[i] = memory.descriptor();
        local[i] = arena.allocate(bytes, 64);
      }
      return new KvRegions(regions, local);
    }
  }

  /**
   * The best of {@code reps} pulls of {@code runs} of blocks from every layer's key and value
   * regions into the local side, the way a decode worker reads: one read per layer, all layers in
   * flight.
   */
  static double bestPullSeconds(TransferAgent decode, KvRegions memory, int layers, long blockBytes, List<BlockRuns.Run> runs, int reps)
      throws Exception {
    MemoryDescriptor[] regions = memory.regions();
    MemorySegment[] local = memory.local();
    double best = Double.MAX_VALUE;
    for (int rep = 0; rep < reps; rep++) {
      long t0 = System.nanoTime();
      List<CompletableFuture<Void>> reads = new ArrayList<>();
      for (int l = 0; l < layers; l++) {
        List<MemoryDescriptor> from = new ArrayList<>();
        List<MemorySegment> into = new ArrayList<>();
        for (BlockRuns.Run run : runs) {
          for (int kv = 0; kv < 2; kv++) {
            from.add(regions[2 * l + kv].slice(run.from() * blockBytes, run.length() * blockBytes));
            into.add(local[2 * l + kv].asSlice(run.to() * blockBytes, run.length() * blockBytes));
          }
        }
        reads.add(decode.read(from, into, Duration.ofSeconds(60), null));
      }
      CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
      best = Math.min(best, (System.nanoTime() - t0) / 1e9);
    }
    return best;
  }
}
