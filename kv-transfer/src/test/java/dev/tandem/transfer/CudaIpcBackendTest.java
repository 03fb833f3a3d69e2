package dev.tandem.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.transfer.cudaipc.CudaDeviceMemory;
import dev.tandem.transfer.cudaipc.CudaIpcBackendProvider;
import dev.tandem.transfer.cudaipc.CudaIpcTransferAgent;
import dev.tandem.transfer.cudaipc.HostDeviceMemory;
import java.lang.foreign.MemorySegment;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite against {@code cuda-ipc}, on host memory standing in for a GPU ({@link
 * HostDeviceMemory}: no GPU here). What runs for real: the agent's side channel over a Unix socket,
 * its checks of regions, keys and ranges, the confirmation after the copies, handles opened once
 * per owner allocation and closed with the reader, timeouts and closing. What does not: the CUDA
 * calls themselves ({@code cuIpcGetMemHandle}, {@code cuIpcOpenMemHandle}, device copies), which
 * {@code CudaIpcDeviceTest} runs between two processes where a GPU is.
 */
class CudaIpcBackendTest extends TransferBackendConformanceTest {
  private final List<HostDeviceMemory> devices = new ArrayList<>();

  @Override
  protected TransferAgent newAgent() {
    HostDeviceMemory device = new HostDeviceMemory();
    devices.add(device);
    return new CudaIpcTransferAgent(device, true);
  }

  @Test
  void eachOwnerAllocationIsOpenedOnceAndClosedWithTheReader() throws Exception {
    MemorySegment src = random(1 << 20, 5);
    MemoryDescriptor d = owner.register(src);
    MemorySegment dst = arena.allocate(1 << 20, 64);
    for (int i = 0; i < 5; i++) {
      reader.read(List.of(d.slice(i * 4096L, 4096), d.slice(0, 1 << 19)), List.of(dst.asSlice(0, 4096), dst.asSlice(4096, 1 << 19)),
          Duration.ofSeconds(10), null).get(10, TimeUnit.SECONDS);
    }
    assertEquals(-1, src.asSlice(0, 1 << 19).mismatch(dst.asSlice(4096, 1 << 19)));
    HostDeviceMemory readerDevice = devices.get(1);
    assertEquals(1, readerDevice.opens.get(), "one open for the owner's one allocation, however many reads");
    reader.close();
    assertEquals(1, readerDevice.closes.get(), "closed with the reader");
    reader = newAgent(); // for the suite's own teardown
  }

  @Test
  void aNewAllocationAtAFreedOnesAddressIsMappedAnew() throws Exception {
    // The driver reuses a freed allocation's addresses; a mapping of the old one would read stale
    // memory on a GPU. Here the second allocation starts where the first did (a longer range of the
    // same host memory, under a new handle): the reader must open that handle, not reuse the old mapping.
    MemorySegment memory = random(16384, 13);
    MemoryDescriptor small = owner.register(memory.asSlice(0, 8192));
    MemorySegment dst = arena.allocate(16384, 64);
    reader.read(List.of(small), List.of(dst.asSlice(0, 8192)), Duration.ofSeconds(10), null).get(10, TimeUnit.SECONDS);
    owner.deregister(small);
    MemoryDescriptor large = owner.register(memory);
    reader.read(List.of(large), List.of(dst), Duration.ofSeconds(10), null).get(10, TimeUnit.SECONDS);
    assertEquals(-1, memory.mismatch(dst));
    assertEquals(2, devices.get(1).opens.get(), "the new allocation's handle opened");
  }

  @Test
  void aHandleThatCannotBeOpenedFailsThatReadOnly() throws Exception {
    MemorySegment first = random(8192, 11);
    MemorySegment second = random(8192, 12);
    List<MemoryDescriptor> both = List.of(owner.register(first), owner.register(second)); // two allocations, two handles
    MemorySegment dst = arena.allocate(16384, 64);
    List<MemorySegment> into = List.of(dst.asSlice(0, 8192), dst.asSlice(8192, 8192));
    HostDeviceMemory readerDevice = devices.get(1);
    readerDevice.failingOpens.set(1);
    var failed = reader.read(both, into, Duration.ofSeconds(10), null);
    var e = assertThrows(ExecutionException.class, () -> failed.get(10, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("mapping allocation"), e.getCause().getMessage());
    assertTrue(e.getCause().getMessage().contains("CUDA_ERROR_OUT_OF_MEMORY"), e.getCause().getMessage());

    // The next read is whole: the connection did not fall out of step, and the handle not opened is sent again.
    reader.read(both, into, Duration.ofSeconds(10), null).get(10, TimeUnit.SECONDS);
    assertEquals(-1, first.mismatch(dst.asSlice(0, 8192)));
    assertEquals(-1, second.mismatch(dst.asSlice(8192, 8192)));
  }

  @Test
  void aRegionDeregisteredDuringTheReadFailsIt() {
    MemorySegment src = random(64 << 10, 6);
    MemoryDescriptor d = owner.register(src);
    MemorySegment dst = arena.allocate(64 << 10, 64);
    var read = reader.read(List.of(d.slice(0, 32 << 10), d.slice(32 << 10, 32 << 10)), List.of(dst.asSlice(0, 32 << 10),
        dst.asSlice(32 << 10, 32 << 10)), Duration.ofSeconds(10), i -> owner.deregister(d));
    var e = assertThrows(ExecutionException.class, () -> read.get(10, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("deregistered during the read"), e.getCause().getMessage());
  }

  @Test
  void anOwnerOnAnotherNodeIsRefusedByName() {
    MemoryDescriptor d = owner.register(random(4096, 8));
    String elsewhere = d.agentAddress().replaceFirst("^cuda-ipc:[^:]+:", "cuda-ipc:another-node:");
    var read = reader.read(List.of(new MemoryDescriptor(elsewhere, d.regionId(), d.key(), 0, 4096)), List.of(arena.allocate(4096)),
        Duration.ofSeconds(10), null);
    var e = assertThrows(ExecutionException.class, () -> read.get(10, TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("another node"), e.getCause().getMessage());
  }

  @Test
  void anOwnerThatNeverAnswersTimesTheReadOut() throws Exception {
    Path dir = Files.createTempDirectory("cuda-ipc-silent");
    Path socket = dir.resolve("agent.sock");
    try (ServerSocketChannel silent = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      silent.bind(UnixDomainSocketAddress.of(socket));
      String node = owner.address().split(":")[1];
      MemoryDescriptor d = new MemoryDescriptor("cuda-ipc:" + node + ":" + socket, 1, 2, 0, 4096);
      long t0 = System.nanoTime();
      var read = reader.read(List.of(d), List.of(arena.allocate(4096)), Duration.ofMillis(500), null);
      try (SocketChannel accepted = silent.accept()) { // connected, and never answered
        var e = assertThrows(ExecutionException.class, () -> read.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof TimeoutException, e.getCause().toString());
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      assertTrue(seconds < 5, "timed out after " + seconds + " s");
    } finally {
      Files.deleteIfExists(socket);
      Files.deleteIfExists(dir);
    }
  }

  @Test
  void closingFreesWhatTheAgentAllocated() {
    HostDeviceMemory device = new HostDeviceMemory();
    TransferAgent agent = new CudaIpcTransferAgent(device, true);
    agent.allocate(1 << 20);
    try (TransferAgent.Landing landing = agent.landing(4096)) {
      assertEquals(2, device.live());
    }
    assertEquals(1, device.live(), "a landing area is freed when it closes");
    agent.close();
    assertEquals(0, device.live());
    assertTrue(agent.deviceMemory());
  }

  @Test
  void theProviderNamesWhatIsMissingWhereNoGpuIs() {
    var provider = new CudaIpcBackendProvider();
    String reason = CudaDeviceMemory.unavailableReason();
    assertEquals(reason == null, provider.isAvailable());
    if (reason != null) {
      assertFalse(provider.unavailableReason().isEmpty());
      var refused = assertThrows(IllegalArgumentException.class, () -> TransferBackends.select("cuda-ipc"));
      assertTrue(refused.getMessage().contains("not available"), refused.getMessage());
      assertFalse(TransferBackends.alongside("auto", TransferBackends.select("tcp")).stream().anyMatch(p -> p.name().equals("cuda-ipc")));
    }
    assertTrue(provider.priority() < TransferBackends.select("tcp").priority(), "never the automatic primary");
  }
}
