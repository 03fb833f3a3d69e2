package dev.tandem.bench;

import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.transfer.BlockRuns;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferBackendProvider;
import dev.tandem.transfer.TransferBackends;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * The KV cache dtype's effect, f32 (what the engine stored before 16-bit caches) beside bf16 and
 * f16, in one run on one model: tokens a GiB of KV cache holds (as the engine sizes its pool), the
 * time to pull a {@code tokens}-token prompt's KV over every available transfer backend (laid out
 * and read as a decode worker reads it), and the engine's decode speed at that context and its
 * whole-prompt prefill speed (16-bit entries are narrowed as written and widened as attention
 * reads them). Disaggregated TTFT end to end is {@code benchmarks/scripts/kv_dtype.sh}.
 *
 * <pre>KvCacheDtypes MODEL_DIR [threads] [tokens=4096] [sections=capacity,transfer,engine] [dtypes=f32,bf16,f16]</pre>
 *
 * <p>The engine section's kernels compile for the dtype they first see and recompile when another
 * comes: for figures a worker would see, run it with one dtype per JVM (the script does, in
 * interleaved rounds). With {@code -Dtandem.chart=FILE.png} the transfer section is also drawn.
 */
public final class KvCacheDtypes {
  private static final int BLOCK = 16;
  private static final DType[] ALL = {DType.F32, DType.BF16, DType.F16};

  private KvCacheDtypes() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : Runtime.getRuntime().availableProcessors();
    int tokens = args.length > 2 ? Integer.parseInt(args[2]) : 4096;
    List<String> sections = List.of((args.length > 3 ? args[3] : "capacity,transfer,engine").split(","));
    DType[] dtypes = args.length > 4 ? java.util.Arrays.stream(args[4].split(",")).map(DType::fromShortName).toArray(DType[]::new) : ALL;
    ModelConfig model = ModelConfig.read(dir);
    System.out.printf(Locale.ROOT, "model %s: %d layers, %d KV heads × %d, torch_dtype %s; %d threads%n",
        dir.getFileName(), model.numLayers(), model.numKvHeads(), model.headDim(), model.torchDtype().shortName(), threads);

    if (sections.contains("capacity")) {
      capacity(dir);
    }
    if (sections.contains("transfer")) {
      transfer(model, tokens);
    }
    if (sections.contains("engine")) {
      engine(dir, threads, tokens, dtypes);
    }
    System.exit(0);
  }

  private static void capacity(Path dir) {
    System.out.println("\n[capacity] KV cache of 1 GiB, as the engine sizes its block pool");
    System.out.printf(Locale.ROOT, "%-6s %14s %14s %8s%n", "kv", "bytes/token", "tokens/GiB", "vs f32");
    long f32Tokens = 0;
    for (DType kv : ALL) {
      try (BuiltinEngine engine = BuiltinEngine.open(BuiltinConfig.of(dir).withCompute("cpu", 1).withKvCacheBytes(1L << 30).withKvCacheDtype(kv))) {
        long held = (long) engine.info().totalKvBlocks() * engine.info().blockSize();
        f32Tokens = kv == DType.F32 ? held : f32Tokens;
        System.out.printf(Locale.ROOT, "%-6s %14d %14d %7.2f×%n", kv.shortName(), engine.info().kvBytesPerToken(), held, (double) held / f32Tokens);
      }
    }

  }

  private static void transfer(ModelConfig model, int tokens) throws Exception {
    System.out.printf(Locale.ROOT, "%n[transfer] a %d-token prompt's KV, best of 8 pulls (contiguous blocks, one read per layer, all layers in flight)%n", tokens);
    System.out.printf(Locale.ROOT, "%-8s %-6s %10s %12s %10s %8s%n", "backend", "kv", "MB", "pull ms", "GB/s", "vs f32");
    java.util.Map<DType, List<Double>> millis = new java.util.EnumMap<>(DType.class);
    List<String> backends = new java.util.ArrayList<>();
    for (TransferBackendProvider provider : TransferBackends.all()) {
      if (!provider.isAvailable()) {
        System.out.println(provider.name() + ": " + provider.unavailableReason());
        continue;
      }
      double f32Seconds = 0;
      backends.add(provider.name());
      for (DType kv : ALL) {
        double s = pull(provider, model, kv, tokens);
        millis.computeIfAbsent(kv, k -> new java.util.ArrayList<>()).add(s * 1e3);
        f32Seconds = kv == DType.F32 ? s : f32Seconds;
        double bytes = (double) model.kvBytesPerToken(kv) * tokens;
        System.out.printf(Locale.ROOT, "%-8s %-6s %10.1f %12.2f %10.2f %7.2f×%n",
            provider.name(), kv.shortName(), bytes / 1e6, s * 1e3, bytes / s / 1e9, s / f32Seconds);
      }
    }
    String chart = System.getProperty("tandem.chart");
    if (chart != null && !backends.isEmpty()) {
      org.knowm.xchart.CategoryChart c = new org.knowm.xchart.CategoryChartBuilder().width(900).height(500)
          .title(String.format(Locale.ROOT, "Pulling a %d-token prompt's KV (%d layers): ms, lower is better", tokens, model.numLayers()))
          .xAxisTitle("transfer backend").yAxisTitle("ms (best of 8)").build();
      for (DType kv : ALL) {
        c.addSeries(kv.shortName() + (kv == DType.F32 ? " (before)" : ""), backends, millis.get(kv));
      }
      org.knowm.xchart.BitmapEncoder.saveBitmap(c, chart, org.knowm.xchart.BitmapEncoder.BitmapFormat.PNG);
      System.out.println("chart: " + chart);
    }
  }

  private static void engine(Path dir, int threads, int tokens, DType[] dtypes) {
    System.out.printf(Locale.ROOT, "%n[engine] decode at a %d-token context (64 steps after the prefill), whole-prompt prefill of %d tokens%n", tokens, tokens);
    System.out.printf(Locale.ROOT, "%-6s %16s %16s %16s%n", "kv", "decode b1 tok/s", "decode b4 tok/s", "prefill tok/s");
    for (DType kv : dtypes) {
      BuiltinConfig base = BuiltinConfig.of(dir).withCompute("cpu", threads).withKvCacheBytes(2L << 30).withKvCacheDtype(kv)
          .withMaxContextLength(tokens + 128);
      double b1;
      double b4;
      try (BuiltinEngine engine = BuiltinEngine.open(base.withBatching(4, 4096, true))) {
        b1 = EngineThroughput.decode(engine, 1, tokens, 64);
        b4 = EngineThroughput.decode(engine, 4, tokens, 64);
        b1 = Math.max(b1, EngineThroughput.decode(engine, 1, tokens, 64)); // the first may run before the JIT is done
      }
      double prefill = EngineThroughput.prefill(base.withBatching(1, tokens, false), tokens);
      System.out.printf(Locale.ROOT, "%-6s %16.1f %16.1f %16.1f%n", kv.shortName(), b1, b4, prefill);
    }
  }

  /** Seconds to pull {@code tokens} tokens of KV in {@code kv} entries from one agent to another. */
  private static double pull(TransferBackendProvider provider, ModelConfig model, DType kv, int tokens) throws Exception {
    int layers = model.numLayers();
    long blockBytes = (long) BLOCK * model.kvDim() * kv.bytes();
    int blocks = tokens / BLOCK;
    try (Arena arena = Arena.ofShared();
        TransferAgent prefill = provider.createAgent("127.0.0.1", 0, null);
        TransferAgent decode = provider.createAgent("127.0.0.1", 0, null)) {
      KvPullCost.KvRegions regions = KvPullCost.KvRegions.allocate(prefill, arena, layers, blocks * blockBytes);
      int[] ids = java.util.stream.IntStream.range(0, blocks).toArray();
      return KvPullCost.bestPullSeconds(decode, regions, layers, blockBytes, BlockRuns.of(ids, ids, 0), 8);
    }
  }
}
