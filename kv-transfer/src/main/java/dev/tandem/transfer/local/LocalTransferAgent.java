package dev.tandem.transfer.local;

import dev.tandem.common.PageMemory;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.Regions;
import dev.tandem.transfer.RegisteredMemory;
import dev.tandem.transfer.TransferAgent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Transfers within one process: a read is a memory copy from the peer agent's registered segment.
 * The limit it is measured against is the machine's memory copy bandwidth. Thread-safe.
 */
public final class LocalTransferAgent implements TransferAgent {
  private static final Map<String, LocalTransferAgent> AGENTS = new ConcurrentHashMap<>();
  private static final AtomicLong NEXT = new AtomicLong();

  private final String address = "local:" + NEXT.incrementAndGet();
  private final Regions regions = new Regions();
  private final Arena owned = Arena.ofShared();
  private volatile boolean closed;

  public LocalTransferAgent() {
    AGENTS.put(address, this);
  }

  @Override
  public String backend() {
    return "local";
  }

  @Override
  public String address() {
    return address;
  }

  @Override
  public MemoryDescriptor register(MemorySegment segment) {
    return regions.add(address, segment);
  }

  @Override
  public RegisteredMemory allocate(long bytes) {
    MemorySegment segment = PageMemory.allocate(owned, bytes); // whole pages: a GPU worker maps KV memory into the device
    return new RegisteredMemory(segment, register(segment));
  }

  @Override
  public void deregister(MemoryDescriptor region) {
    regions.remove(region);
  }

  @Override
  public CompletableFuture<Void> read(
      List<MemoryDescriptor> remote, List<MemorySegment> local, Duration timeout, TransferListener listener) {
    Regions.checkPairs(remote, local);
    return CompletableFuture.runAsync(
            () -> {
              for (int i = 0; i < remote.size(); i++) {
                MemoryDescriptor d = remote.get(i);
                LocalTransferAgent peer = AGENTS.get(d.agentAddress());
                if (peer == null || peer.closed) {
                  throw new IllegalStateException("agent " + d.agentAddress() + " is gone");
                }
                MemorySegment.copy(peer.regions.resolve(d.regionId(), d.key(), d.offset(), d.length()), 0, local.get(i), 0, d.length());
                if (listener != null) {
                  listener.descriptorDone(i);
                }
              }
            })
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    AGENTS.remove(address);
    owned.close(); // a copy still running from it fails (shared arena), it does not crash
  }
}
