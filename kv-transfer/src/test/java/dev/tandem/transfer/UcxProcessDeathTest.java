package dev.tandem.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.transfer.ucx.UcxBackendProvider;
import dev.tandem.transfer.ucx.UcxTransferAgent;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * UCX between two processes on one node, where reads go over shared memory without UCX's
 * peer-error handling: a process killed mid-transfer (SIGKILL) on either side must fail the
 * read, leave the survivor serving, and not take the survivor down when it closes (a UCX abort
 * would crash this test JVM and fail the build).
 */
@org.junit.jupiter.api.Tag("e2e") // spawns and kills peer processes: the full tier, not -Pfast
class UcxProcessDeathTest {
  private static final long REGION = 256L << 20;
  private Arena arena;
  private Process other;

  @BeforeEach
  void setUp() {
    UcxBackendProvider provider = new UcxBackendProvider();
    assumeTrue(provider.isAvailable(), provider.unavailableReason());
    arena = Arena.ofShared();
  }

  @AfterEach
  void tearDown() {
    if (other != null) {
      other.destroyForcibly();
    }
    if (arena != null) { // null when setUp skipped: no UCX here
      arena.close();
    }
  }

  private BufferedReader start(String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(
        ProcessHandle.current().info().command().orElseThrow(), "--enable-native-access=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"), UcxPeerProcess.class.getName()));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
    pb.environment().put("UCX_NET_DEVICES", "lo");
    other = pb.start();
    return new BufferedReader(new InputStreamReader(other.getInputStream()));
  }

  /** A second JVM owning a region of REGION bytes; its descriptor. */
  private MemoryDescriptor startOwner() throws Exception {
    String[] ready = start("owner", Long.toString(REGION)).readLine().split(" ");
    assertEquals("READY", ready[0]);
    return new MemoryDescriptor(ready[1], Long.parseLong(ready[2]), Long.parseLong(ready[3]), 0, REGION);
  }

  /** The region in 64 pieces: a read long enough to interrupt after its first piece. */
  private static List<MemoryDescriptor> pieces(MemoryDescriptor region) {
    long piece = region.length() / 64;
    List<MemoryDescriptor> out = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      out.add(region.slice(i * piece, piece));
    }
    return out;
  }

  @Test
  void anOwnerKilledMidTransferFailsTheReadAndTheReaderCarriesOn() throws Exception {
    MemoryDescriptor region = startOwner();
    try (UcxTransferAgent reader = new UcxTransferAgent("127.0.0.1")) {
      List<MemoryDescriptor> remote = pieces(region);
      List<MemorySegment> local = remote.stream().map(d -> arena.allocate(d.length(), 64)).toList();
      CompletableFuture<Void> read = reader.read(remote, local, Duration.ofSeconds(30), i -> {
        if (i == 0) {
          other.destroyForcibly();
        }
      });
      var e = assertThrows(ExecutionException.class, () -> read.get(20, TimeUnit.SECONDS));
      assertTrue(e.getCause().getMessage().contains("went away"), e.getCause().getMessage());
      assertTrue(other.waitFor(10, TimeUnit.SECONDS));

      // The reader still reads from a live owner, over the same path.
      try (UcxTransferAgent owner = new UcxTransferAgent("127.0.0.1")) {
        MemorySegment src = arena.allocate(8 << 20, 64);
        src.fill((byte) 3);
        MemorySegment dst = arena.allocate(8 << 20, 64);
        reader.read(List.of(owner.register(src)), List.of(dst), Duration.ofSeconds(30), null).get(20, TimeUnit.SECONDS);
        assertEquals(-1, src.mismatch(dst));
      }
    }
  }

  @Test
  void aReaderKilledMidTransferLeavesTheOwnerServing() throws Exception {
    try (UcxTransferAgent owner = new UcxTransferAgent("127.0.0.1")) {
      MemorySegment src = arena.allocate(REGION, 64);
      src.fill((byte) 5);
      MemoryDescriptor region = owner.register(src);
      BufferedReader out = start("reader", region.agentAddress(), Long.toString(region.regionId()), Long.toString(region.key()), Long.toString(REGION));
      assertEquals("READING", out.readLine());
      Thread.sleep(50); // into the transfer
      other.destroyForcibly();
      assertTrue(other.waitFor(10, TimeUnit.SECONDS));

      // The owner serves a new reader. A read that does not finish is tried once more from another
      // agent before the test fails: a clean-clone CI run once saw the first read after the kill
      // time out (not reproduced in 80 runs here, loaded or not); the second read tells a stuck
      // owner (fails too) from a stuck reader (the owner still serves), and the log keeps the case.
      MemorySegment dst = arena.allocate(REGION, 64);
      for (int attempt = 1; ; attempt++) {
        try (UcxTransferAgent reader = new UcxTransferAgent("127.0.0.1")) {
          dst.fill((byte) 0);
          reader.read(List.of(region), List.of(dst), Duration.ofSeconds(20), null).get(25, TimeUnit.SECONDS);
          assertEquals(-1, src.mismatch(dst));
          return;
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
          if (attempt == 2) {
            throw new AssertionError("the owner served no reader after one was killed mid-transfer", e);
          }
          System.err.println("UcxProcessDeathTest: the first read after the kill did not finish (" + e
              + "; the owner's gets given up " + owner.lostGets() + "); reading again from another agent");
        }
      }
    }
  }

  @Test
  void aStoppedOwnerTimesTheReadOut() throws Exception {
    MemoryDescriptor region = startOwner();
    try (UcxTransferAgent reader = new UcxTransferAgent("127.0.0.1")) {
      MemorySegment dst = arena.allocate(8 << 20, 64);
      // Connected and warm first, then the owner stops answering (SIGSTOP) without going away.
      reader.read(List.of(region.slice(0, 8 << 20)), List.of(dst), Duration.ofSeconds(30), null).get(20, TimeUnit.SECONDS);
      List<MemoryDescriptor> remote = pieces(region);
      List<MemorySegment> local = remote.stream().map(d -> arena.allocate(d.length(), 64)).toList();
      long t0 = System.nanoTime();
      CompletableFuture<Void> read = reader.read(remote, local, Duration.ofSeconds(1), i -> {
        if (i == 0) {
          try {
            // the shell's own kill: no procps needed
            new ProcessBuilder("sh", "-c", "kill -STOP " + other.pid()).start().waitFor();
          } catch (Exception ex) {
            throw new IllegalStateException(ex);
          }
        }
      });
      var e = assertThrows(ExecutionException.class, () -> read.get(20, TimeUnit.SECONDS));
      assertTrue(e.getCause().getMessage().contains("longer than"), e.getCause().getMessage());
      double seconds = (System.nanoTime() - t0) / 1e9;
      assertTrue(seconds >= 1 && seconds < 10, "timed out after " + seconds + " s");
    }
  }
}
