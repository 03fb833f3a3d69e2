package dev.tandem.cli;

import dev.tandem.engine.model.ModelConfig;
import dev.tandem.transfer.LinkProbe;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferBackendProvider;
import dev.tandem.transfer.TransferBackends;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
    name = "link-probe",
    mixinStandardHelpOptions = true,
    description = {
      "Measures the KV transfer link between two machines (or processes) with a transfer backend.",
      "On one side: tandem link-probe --serve (prints a peer spec). On the other: tandem link-probe --peer SPEC.",
      "Prints latency and throughput, the time to move a 4,096-token KV cache, and the prompt length from which moving KV is cheaper than recomputing it (given --prefill-tokens-per-s)."
    })
final class LinkProbeCommand implements Callable<Integer> {
  @Option(names = "--serve", description = "Register a buffer and wait for probes.")
  boolean serve;

  @Option(names = "--peer", description = "A peer spec printed by --serve: BACKEND/AGENT-ADDRESS/REGION/LENGTH.")
  String peer;

  @Option(names = "--backend", defaultValue = "${env:TANDEM_KV_TRANSFER}", description = "Transfer backend for --serve: tcp, ucx or local (default: the best available).")
  String backend;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address peers reach this side at (default ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--bytes", defaultValue = "256m", description = "Buffer --serve registers (default ${DEFAULT-VALUE}).")
  String bytes;

  @Option(names = "--model", description = "Model directory whose KV bytes per token to use, at --kv-cache-dtype.")
  Path model;

  @Option(names = "--kv-cache-dtype", defaultValue = "auto",
      description = "With --model: the KV cache dtype the workers use, auto (the model's torch_dtype), f32, bf16 or f16 (default ${DEFAULT-VALUE}).")
  String kvCacheDtype;

  @Option(names = "--kv-bytes-per-token", defaultValue = "114688", description = "KV bytes per token when no --model is given (default ${DEFAULT-VALUE}: Qwen3-0.6B in bf16).")
  long kvBytesPerToken;

  @Option(names = "--prefill-tokens-per-s", description = "Local prefill speed, for the break-even prompt length.")
  Double prefillTokensPerSecond;

  @Override
  public Integer call() throws Exception {
    if (serve == (peer != null)) {
      throw new IllegalArgumentException("give exactly one of --serve and --peer SPEC");
    }
    return serve ? serve() : probe(System.out);
  }

  private int serve() throws Exception {
    TransferBackendProvider provider = TransferBackends.select(backend);
    // The agent closes first: its event loops may still be sending from the arena's memory until then.
    try (Arena arena = Arena.ofShared(); TransferAgent agent = provider.createAgent(host)) {
      MemoryDescriptor d;
      if (agent.deviceMemory()) {
        d = agent.allocate(EngineOptions.parseBytes(bytes)).descriptor(); // GPU memory (cuda-ipc), the agent's until it closes
      } else {
        MemorySegment buffer = arena.allocate(EngineOptions.parseBytes(bytes), 64);
        buffer.fill((byte) 0x5a);
        d = agent.register(buffer);
      }
      System.out.println("peer spec: " + spec(provider.name(), d));
      System.out.println("probe with: tandem link-probe --peer " + spec(provider.name(), d) + "   (Ctrl-C stops this side)");
      new CountDownLatch(1).await();
    }
    return 0;
  }

  static String spec(String backend, MemoryDescriptor d) {
    return backend + "/" + d.agentAddress() + "/" + d.regionId() + "/" + Long.toHexString(d.key()) + "/" + d.length();
  }

  int probe(PrintStream out) throws Exception {
    String[] parts = peer.split("/");
    if (parts.length != 5) {
      throw new IllegalArgumentException("--peer must look like BACKEND/AGENT-ADDRESS/REGION/KEY/LENGTH (as --serve prints it), was " + peer);
    }
    TransferBackendProvider provider = TransferBackends.select(parts[0]);
    MemoryDescriptor region =
        new MemoryDescriptor(parts[1], Long.parseLong(parts[2]), Long.parseUnsignedLong(parts[3], 16), 0, Long.parseLong(parts[4]));
    long perToken = model == null ? kvBytesPerToken
        : kvCacheDtype.equals("auto") ? ModelConfig.read(model).kvBytesPerToken()
        : ModelConfig.read(model).kvBytesPerToken(dev.tandem.engine.model.DType.fromShortName(kvCacheDtype));
    long[] sizes = java.util.Arrays.stream(new long[] {1L << 20, 16L << 20, 64L << 20, 256L << 20})
        .filter(s -> s <= region.length()).toArray();
    LinkProbe.Result r;
    try (TransferAgent agent = provider.createAgent(host)) {
      r = LinkProbe.run(agent, region, sizes);
    }
    out.printf(Locale.ROOT, "backend %s, peer %s%n", r.backend(), region.agentAddress());
    out.printf(Locale.ROOT, "latency (4 KiB read, median): %.1f µs%n", r.latencySeconds() * 1e6);
    for (LinkProbe.Throughput t : r.throughput()) {
      out.printf(Locale.ROOT, "throughput %4d MiB reads: %.2f GB/s%n", t.bytes() >> 20, t.bytesPerSecond() / 1e9);
    }
    long kv4k = perToken * 4096;
    out.printf(Locale.ROOT, "KV of 4,096 tokens at %d bytes/token = %.1f MB: %.1f ms to move%n",
        perToken, kv4k / 1e6, r.secondsToMove(kv4k) * 1e3);
    double transferPerToken = perToken / r.bytesPerSecondAt(kv4k);
    if (prefillTokensPerSecond == null) {
      out.printf(Locale.ROOT, "moving KV costs %.1f µs per token; pass --prefill-tokens-per-s for the break-even%n", transferPerToken * 1e6);
    } else {
      double prefillPerToken = 1 / prefillTokensPerSecond;
      if (transferPerToken >= prefillPerToken) {
        out.printf(Locale.ROOT, "break-even: never — moving a token's KV (%.1f µs) costs more than computing it (%.1f µs)%n",
            transferPerToken * 1e6, prefillPerToken * 1e6);
      } else {
        double n = r.latencySeconds() / (prefillPerToken - transferPerToken);
        out.printf(Locale.ROOT, "break-even prompt length: %.0f tokens (moving %.1f µs/token vs computing %.1f µs/token, plus %.1f µs latency)%n",
            Math.ceil(n), transferPerToken * 1e6, prefillPerToken * 1e6, r.latencySeconds() * 1e6);
      }
    }
    return 0;
  }
}
