package dev.tandem.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.transfer.tcp.TcpTransferAgent;
import java.lang.foreign.MemorySegment;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class TcpBackendTest extends TransferBackendConformanceTest {
  @Override
  protected TransferAgent newAgent() {
    return new TcpTransferAgent("127.0.0.1");
  }

  @Test
  void aPeerThatNeverAnswersTimesOut() throws Exception {
    try (ServerSocket silent = new ServerSocket(0)) {
      Thread acceptor = Thread.ofVirtual().start(() -> {
        try (Socket s = silent.accept()) {
          Thread.sleep(10_000);
        } catch (Exception ignored) {
          // closed by the test
        }
      });
      MemoryDescriptor d = new MemoryDescriptor("127.0.0.1:" + silent.getLocalPort(), 1, 0, 0, 4096);
      long t0 = System.nanoTime();
      var e = assertThrows(ExecutionException.class, () -> reader.read(
          List.of(d), List.of(arena.allocate(4096)), Duration.ofMillis(500), null).get(10, TimeUnit.SECONDS));
      assertTrue(e.getCause() instanceof TimeoutException, e.getCause().toString());
      assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5));
      acceptor.interrupt();
    }
  }

  @Test
  void heapMemoryIsRefusedWithAReason() {
    var e = assertThrows(IllegalArgumentException.class, () -> owner.register(MemorySegment.ofArray(new byte[16])));
    assertTrue(e.getMessage().contains("off-heap"));
  }

  @Test
  void backendsAreFoundByPriorityOrName() {
    // UCX where libucx loads, the Netty tcp backend where it does not.
    String best = new dev.tandem.transfer.ucx.UcxBackendProvider().isAvailable() ? "ucx" : "tcp";
    assertEquals(best, TransferBackends.select(null).name());
    assertEquals(best, TransferBackends.select("auto").name());
    assertEquals("local", TransferBackends.select("local").name());
    var e = assertThrows(IllegalArgumentException.class, () -> TransferBackends.select("rdma"));
    assertTrue(e.getMessage().contains("known: [ucx, tcp, cuda-ipc, local]"), e.getMessage());
  }

  @Test
  void autoRunsTheOtherCrossProcessBackendsBesideThePrimary() {
    var primary = TransferBackends.select("auto");
    List<String> beside = TransferBackends.alongside("auto", primary).stream().map(TransferBackendProvider::name).toList();
    assertEquals(primary.name().equals("ucx") ? List.of("tcp") : List.of(), beside, "never local, never the primary");
    assertEquals(List.of(), TransferBackends.alongside("tcp", TransferBackends.select("tcp")), "a named backend runs alone");
  }

  @Test
  void anAgentListensOnTheFixedPortItIsGiven() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    }
    try (TransferAgent agent = TransferBackends.select("tcp").createAgent("127.0.0.1", port)) {
      assertEquals("127.0.0.1:" + port, agent.address());
      try (Socket s = new Socket("127.0.0.1", port)) {
        assertTrue(s.isConnected());
      }
    }
    var local = assertThrows(IllegalArgumentException.class, () -> TransferBackends.select("local").createAgent("127.0.0.1", port));
    assertTrue(local.getMessage().contains("--kv-transfer-port"), local.getMessage());
  }
}
