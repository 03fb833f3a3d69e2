package dev.tandem.transfer.cudaipc;

import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.Regions;
import dev.tandem.transfer.RegisteredMemory;
import dev.tandem.transfer.TransferAgent;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * KV transfer between processes on one node straight from GPU memory to GPU memory: the owner
 * exports each registered region's allocation with {@code cuIpcGetMemHandle}; a reader maps it
 * once ({@code cuIpcOpenMemHandle}) and copies device to device on a stream of its own. Its
 * memory is device memory ({@link #deviceMemory()}): what it registers, allocates and reads into
 * are segments naming device addresses, never to be read or written from Java. The side channel
 * ({@link CudaIpcWire}, a Unix socket) checks every read's regions, keys and ranges before the
 * copies and confirms the regions after them.
 *
 * <p>A read runs on the agent's copy thread (reads run one after another: the copies share one
 * link anyway) and completes once its copies have landed and the owner confirmed, or fails; on its
 * timeout the side channel is cut, so it never hangs, and it never completes while a copy into its
 * destination may still run. Thread-safe.
 */
public final class CudaIpcTransferAgent implements TransferAgent {
  private static final Logger log = LoggerFactory.getLogger(CudaIpcTransferAgent.class);

  private final DeviceMemory device;
  private final boolean ownsDevice;
  private final CudaIpcOwner owner;
  private final ExecutorService copies =
      Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("tandem-cuda-ipc-copy").factory());
  private final ScheduledExecutorService watchdog =
      Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("tandem-cuda-ipc-watchdog").factory());
  private final Map<String, CudaIpcPeer> peers = new ConcurrentHashMap<>(); // opened and used on the copy thread
  private final Map<Long, Long> allocated = new ConcurrentHashMap<>(); // address -> bytes, freed on close
  private volatile boolean closed;

  /** An agent over {@code device}; {@code owns}: closing the agent closes the device too. */
  public CudaIpcTransferAgent(DeviceMemory device, boolean owns) {
    this.device = device;
    this.ownsDevice = owns;
    this.owner = new CudaIpcOwner(device);
  }

  /** An agent on this process's GPU 0. */
  public static CudaIpcTransferAgent open() {
    return new CudaIpcTransferAgent(CudaDeviceMemory.open(), true);
  }

  @Override
  public String backend() {
    return "cuda-ipc";
  }

  @Override
  public String address() {
    return owner.address();
  }

  @Override
  public boolean deviceMemory() {
    return true;
  }

  @Override
  public MemoryDescriptor register(MemorySegment segment) {
    Regions.requireNative(segment, "cuda-ipc");
    return owner.register(segment);
  }

  @Override
  public RegisteredMemory allocate(long bytes) {
    MemorySegment segment = deviceSegment(bytes);
    allocated.put(segment.address(), bytes);
    return new RegisteredMemory(segment, register(segment));
  }

  @Override
  public Landing landing(long bytes) {
    MemorySegment segment = deviceSegment(bytes);
    return new Landing(segment, () -> device.free(segment.address()));
  }

  private MemorySegment deviceSegment(long bytes) {
    return MemorySegment.ofAddress(device.allocate(bytes)).reinterpret(bytes);
  }

  @Override
  public void deregister(MemoryDescriptor region) {
    owner.deregister(region);
  }

  @Override
  public CompletableFuture<Void> read(
      List<MemoryDescriptor> remote, List<MemorySegment> local, Duration timeout, TransferListener listener) {
    Regions.checkPairs(remote, local);
    local.forEach(s -> Regions.requireNative(s, "cuda-ipc"));
    CompletableFuture<Void> done = new CompletableFuture<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      copies.execute(() -> {
        try {
          run(List.copyOf(remote), List.copyOf(local), deadline, timeout, listener);
          done.complete(null);
        } catch (Throwable t) {
          done.completeExceptionally(t);
        }
      });
    } catch (RejectedExecutionException e) {
      done.completeExceptionally(new IllegalStateException("cuda-ipc agent " + address() + " is closed"));
    }
    return done;
  }

  /** One read, on the copy thread: locate, copy, report, confirm. */
  private void run(List<MemoryDescriptor> remote, List<MemorySegment> local, long deadline, Duration timeout,
      TransferListener listener) throws Exception {
    if (closed) {
      throw new IllegalStateException("cuda-ipc agent " + address() + " is closed");
    }
    Map<String, List<Integer>> byOwner = new LinkedHashMap<>();
    for (int i = 0; i < remote.size(); i++) {
      byOwner.computeIfAbsent(remote.get(i).agentAddress(), a -> new ArrayList<>()).add(i);
    }
    long[] sources = new long[remote.size()];
    for (var e : byOwner.entrySet()) {
      List<MemoryDescriptor> part = e.getValue().stream().map(remote::get).toList();
      long[] found = ask(e.getKey(), deadline, timeout, peer -> peer.locate(part).addresses());
      for (int j = 0; j < found.length; j++) {
        sources[e.getValue().get(j)] = found[j];
      }
    }
    for (int i = 0; i < remote.size(); i++) {
      device.copy(local.get(i).address(), sources[i], remote.get(i).length());
    }
    device.synchronize();
    if (listener != null) {
      for (int i = 0; i < remote.size(); i++) {
        listener.descriptorDone(i);
      }
    }
    for (var e : byOwner.entrySet()) {
      List<MemoryDescriptor> part = e.getValue().stream().map(remote::get).toList();
      ask(e.getKey(), deadline, timeout, peer -> {
        peer.confirm(part);
        return null;
      });
    }
  }

  private interface Exchange<T> {
    T with(CudaIpcPeer peer) throws IOException;
  }

  /** One exchange with an owner, cut at the read's deadline; a peer that fails is dropped (and reconnected next time). */
  private <T> T ask(String address, long deadline, Duration timeout, Exchange<T> exchange) throws Exception {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new TimeoutException("cuda-ipc read from " + address + " timed out after " + timeout);
    }
    CudaIpcPeer peer = peers.get(address);
    if (peer == null) {
      peer = CudaIpcPeer.connect(address, device);
      peers.put(address, peer);
    }
    CudaIpcPeer p = peer;
    ScheduledFuture<?> dog = watchdog.schedule(p::disconnect, left, TimeUnit.NANOSECONDS);
    try {
      return exchange.with(p);
    } catch (CudaIpcPeer.MappingFailedException e) {
      drop(address, p);
      throw e;
    } catch (IOException e) {
      drop(address, p);
      if (System.nanoTime() >= deadline) {
        throw new TimeoutException("cuda-ipc read from " + address + " timed out after " + timeout);
      }
      throw new IOException("cuda-ipc owner " + address + " went away: " + e.getMessage(), e);
    } finally {
      dog.cancel(false);
    }
  }

  /** Forgets a peer whose connection can no longer be trusted; the next read to its owner connects again. */
  private void drop(String address, CudaIpcPeer peer) {
    peers.remove(address);
    peer.close();
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    owner.close();
    peers.values().forEach(CudaIpcPeer::disconnect); // a read in flight fails at its next exchange
    copies.shutdown();
    try {
      if (!copies.awaitTermination(30, TimeUnit.SECONDS)) {
        log.warn("cuda-ipc agent {}: a read did not end within 30 s of close", address());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    watchdog.shutdownNow();
    peers.values().forEach(CudaIpcPeer::close);
    peers.clear();
    allocated.keySet().forEach(device::free);
    allocated.clear();
    if (ownsDevice) {
      device.close();
    }
  }
}
