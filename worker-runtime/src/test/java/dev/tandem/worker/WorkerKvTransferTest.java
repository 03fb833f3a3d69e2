package dev.tandem.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvHandoff;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.RegisteredMemory;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.local.LocalTransferAgent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Which memory each agent of a worker serves: host agents the host KV cache, a GPU-memory agent
 * ({@code cuda-ipc}) the engine's device copy of it, or nothing when the engine keeps none. The
 * device agent and the engine's device copy are stand-ins here (no GPU: a recording agent, host
 * memory for the "device" segments); the cuda-ipc agent itself is tested in kv-transfer, and the
 * engine's device copy in engine-adapters' {@code CudaTransformerTest}.
 */
class WorkerKvTransferTest {
  private static final int LAYERS = 2;
  private static final long LAYER_BYTES = 4096;
  private final Arena arena = Arena.ofShared();

  @AfterEach
  void close() {
    arena.close();
  }

  @Test
  void aDeviceAgentServesTheEnginesDeviceCopyAndItsOwnProbe() {
    Handoff handoff = new Handoff(true);
    DeviceAgent device = new DeviceAgent();
    try (WorkerKvTransfer transfer = WorkerKvTransfer.create(new LocalTransferAgent(), List.of(device), handoff,
        Duration.ofSeconds(5), Runnable::run)) {
      assertEquals(List.of("local", "device"), transfer.endpoints().stream().map(WorkerKvTransfer.Endpoint::backend).toList());
      List<Long> expected = new ArrayList<>();
      for (int l = 0; l < LAYERS; l++) {
        expected.add(handoff.deviceKeys.get(l).address());
        expected.add(handoff.deviceValues.get(l).address());
      }
      assertEquals(expected, device.registered, "the device copy's layers, not the host cache's");
      assertEquals(1, device.allocated, "its probe region in its own (device) memory");
      assertEquals(WorkerKvTransfer.PROBE_BYTES, transfer.endpoint("device").probe().length());
    }
    assertTrue(device.closed);
  }

  @Test
  void aDeviceAgentBesideAnEngineOnTheCpuIsLeftOut() {
    DeviceAgent device = new DeviceAgent();
    try (WorkerKvTransfer transfer = WorkerKvTransfer.create(new LocalTransferAgent(), List.of(device), new Handoff(false),
        Duration.ofSeconds(5), Runnable::run)) {
      assertEquals(List.of("local"), transfer.endpoints().stream().map(WorkerKvTransfer.Endpoint::backend).toList());
      assertTrue(device.closed);
      assertTrue(device.registered.isEmpty());
    }
  }

  @Test
  void aDeviceAgentCannotBeThePrimary() {
    DeviceAgent device = new DeviceAgent();
    var e = assertThrows(IllegalArgumentException.class,
        () -> WorkerKvTransfer.create(device, List.of(), new Handoff(true), Duration.ofSeconds(5), Runnable::run));
    assertTrue(e.getMessage().contains("--kv-transfer auto"), e.getMessage());
  }

  @Test
  void aPullsReportedThroughputIncludesTheCommitsCopyToOrFromTheGpu() {
    Handoff gpu = new Handoff(true);
    try (WorkerKvTransfer transfer = WorkerKvTransfer.create(new LocalTransferAgent(), List.of(new DeviceAgent()), gpu,
        Duration.ofSeconds(5), Runnable::run)) {
      // Host agent: the link, then the copy into the device (4 GB/s) -> 1 / (1/12 + 1/4) = 3 GB/s.
      assertEquals(3e9, transfer.pullBytesPerSecond(transfer.endpoint("local"), 12e9), 1);
      // Device agent: the link, then the copy into the host cache (2 GB/s) -> 1 / (1/6 + 1/2) = 1.5 GB/s.
      assertEquals(1.5e9, transfer.pullBytesPerSecond(transfer.endpoint("device"), 6e9), 1);
      assertEquals(WorkerKvTransfer.COMMIT_COPY_PROBE_BYTES, gpu.measuredBytes, "timed at start, on the engine's thread");
    }
    try (WorkerKvTransfer transfer = WorkerKvTransfer.create(new LocalTransferAgent(), List.of(), new Handoff(false),
        Duration.ofSeconds(5), Runnable::run)) {
      assertEquals(12e9, transfer.pullBytesPerSecond(transfer.endpoint("local"), 12e9), "no GPU copy: the link alone");
      assertTrue(transfer.commitCopy().isEmpty());
    }
  }

  /** An agent of "GPU memory" that records what it is asked to register and allocate. */
  private final class DeviceAgent implements TransferAgent {
    final List<Long> registered = new ArrayList<>();
    int allocated;
    boolean closed;
    private long next = 1;

    @Override
    public String backend() {
      return "device";
    }

    @Override
    public String address() {
      return "device:1";
    }

    @Override
    public boolean deviceMemory() {
      return true;
    }

    @Override
    public MemoryDescriptor register(MemorySegment segment) {
      registered.add(segment.address());
      return new MemoryDescriptor(address(), next++, 7, 0, segment.byteSize());
    }

    @Override
    public RegisteredMemory allocate(long bytes) {
      allocated++;
      MemorySegment s = MemorySegment.ofAddress(0x1000).reinterpret(bytes); // never touched
      return new RegisteredMemory(s, new MemoryDescriptor(address(), next++, 7, 0, bytes));
    }

    @Override
    public void deregister(MemoryDescriptor region) {}

    @Override
    public CompletableFuture<Void> read(List<MemoryDescriptor> remote, List<MemorySegment> local, Duration timeout,
        TransferListener listener) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  /** A KV cache of two layers in host memory, with (or without) a "device copy" of the same layout. */
  private final class Handoff implements KvHandoff {
    private final List<MemorySegment> keys = new ArrayList<>(), values = new ArrayList<>();
    final List<MemorySegment> deviceKeys = new ArrayList<>(), deviceValues = new ArrayList<>();
    private final boolean onGpu;

    Handoff(boolean onGpu) {
      this.onGpu = onGpu;
      for (int l = 0; l < LAYERS; l++) {
        keys.add(arena.allocate(LAYER_BYTES, 4096));
        values.add(arena.allocate(LAYER_BYTES, 4096));
        deviceKeys.add(arena.allocate(LAYER_BYTES, 256));
        deviceValues.add(arena.allocate(LAYER_BYTES, 256));
      }
    }

    long measuredBytes;

    @Override
    public Optional<HostDeviceCopy> measureHostDeviceCopy(long bytes) {
      measuredBytes = bytes;
      return onGpu ? Optional.of(new HostDeviceCopy(4e9, 2e9)) : Optional.empty();
    }

    @Override
    public Optional<DeviceKv> deviceKv() {
      return onGpu ? Optional.of(new DeviceKv(deviceKeys, deviceValues)) : Optional.empty();
    }

    @Override
    public int layers() {
      return LAYERS;
    }

    @Override
    public long blockBytes() {
      return 256;
    }

    @Override
    public String kvCacheDtype() {
      return "bf16";
    }

    @Override
    public MemorySegment keys(int layer) {
      return keys.get(layer);
    }

    @Override
    public MemorySegment values(int layer) {
      return values.get(layer);
    }

    @Override
    public void relocateKv(LongFunction<MemorySegment> allocate) {
      for (int l = 0; l < LAYERS; l++) {
        keys.set(l, allocate.apply(LAYER_BYTES));
        values.set(l, allocate.apply(LAYER_BYTES));
      }
    }

    @Override
    public void setPromptLayerListener(PromptLayerListener listener) {}

    @Override
    public void holdKvOnFinish(String requestId) {}

    @Override
    public boolean releaseHeld(String requestId) {
      return false;
    }

    @Override
    public PendingImport beginImport(EngineRequest request) {
      return null;
    }

    @Override
    public void commitImport(PendingImport pending, int firstToken) {}

    @Override
    public void abortImport(PendingImport pending) {}
  }
}
