package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.tcp.TcpTransferAgent;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** `tandem link-probe --peer` against a real tcp agent on loopback. */
@org.junit.jupiter.api.Tag("e2e")
class LinkProbeCommandTest {
  @Test
  void reportsLatencyThroughputAndBreakEven() throws Exception {
    // The agent closes before the arena: its event loop may still be writing the last read's bytes from it.
    try (Arena arena = Arena.ofShared(); TransferAgent owner = new TcpTransferAgent("127.0.0.1")) {
      MemoryDescriptor d = owner.register(arena.allocate(16L << 20, 64));
      LinkProbeCommand probe = new LinkProbeCommand();
      probe.peer = LinkProbeCommand.spec("tcp", d);
      probe.host = "127.0.0.1";
      probe.kvBytesPerToken = 114_688;
      probe.prefillTokensPerSecond = 1e9; // computing is "free": moving KV can never pay
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      assertEquals(0, probe.probe(new PrintStream(bytes, true, StandardCharsets.UTF_8)));
      String out = bytes.toString(StandardCharsets.UTF_8);
      assertTrue(out.contains("backend tcp"), out);
      assertTrue(out.matches("(?s).*latency \\(4 KiB read, median\\): [0-9.]+ µs.*"), out);
      assertTrue(out.matches("(?s).*throughput    1 MiB reads: [0-9.]+ GB/s.*throughput   16 MiB reads: [0-9.]+ GB/s.*"), out);
      assertTrue(out.contains("KV of 4,096 tokens at 114688 bytes/token = 469.8 MB"), out);
      assertTrue(out.contains("break-even: never"), out);

      probe.prefillTokensPerSecond = 1.0; // computing is slow: moving pays from a short prompt on
      bytes.reset();
      probe.probe(new PrintStream(bytes, true, StandardCharsets.UTF_8));
      assertTrue(bytes.toString(StandardCharsets.UTF_8).matches("(?s).*break-even prompt length: [0-9]+ tokens.*"), bytes.toString());
    }
  }
}
