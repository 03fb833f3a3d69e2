package dev.tandem.worker;

import dev.tandem.common.KvRegionRef;
import dev.tandem.engine.KvHandoff;
import dev.tandem.wire.FromWire;
import dev.tandem.wire.ToWire;
import dev.tandem.proto.worker.v1.KvRegion;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.RegisteredMemory;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * A worker's side of KV transfer: its agent, the engine's KV cache registered with it (one region
 * per layer for keys and one for values), and a probe region peers read to measure the link.
 *
 * <p>Ownership: owns the agent. The engine's KV cache lives in memory the agent allocated (see
 * {@link #create}), as does the probe region, so this is closed after the engine. Thread-safe.
 */
public final class WorkerKvTransfer implements AutoCloseable {
  /** Bytes of the region peers read to measure the link (largest probe read). */
  public static final long PROBE_BYTES = 64L << 20;

  private final TransferAgent agent;
  private final KvHandoff handoff;
  private final MemoryDescriptor[] keys;
  private final MemoryDescriptor[] values;
  private final MemoryDescriptor probe;
  private final Duration timeout;
  private final java.util.concurrent.atomic.LongAdder pulledBytes = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder pullNanos = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder pulls = new java.util.concurrent.atomic.LongAdder();

  private WorkerKvTransfer(TransferAgent agent, KvHandoff handoff, Map<Long, MemoryDescriptor> byAddress, Duration timeout) {
    this.agent = agent;
    this.handoff = handoff;
    this.timeout = timeout;
    this.keys = new MemoryDescriptor[handoff.layers()];
    this.values = new MemoryDescriptor[handoff.layers()];
    for (int l = 0; l < keys.length; l++) {
      keys[l] = descriptor(handoff.keys(l), byAddress);
      values[l] = descriptor(handoff.values(l), byAddress);
    }
    this.probe = agent.allocate(PROBE_BYTES).descriptor();
  }

  private MemoryDescriptor descriptor(MemorySegment segment, Map<Long, MemoryDescriptor> byAddress) {
    MemoryDescriptor d = byAddress.get(segment.address());
    return d != null && d.length() == segment.byteSize() ? d : agent.register(segment);
  }

  /**
   * Moves {@code handoff}'s KV cache into memory {@code agent} allocates (where the backend reads
   * it fastest; for ucx, shared memory that readers on the node copy from directly) and registers
   * it. Runs the move on the engine's thread through {@code onEngine}, which must return once it
   * ran; the engine must be idle.
   *
   * @param timeout bound on one request's prefill and pull, and on a prefill worker's hold
   */
  public static WorkerKvTransfer create(
      TransferAgent agent, KvHandoff handoff, Duration timeout, Consumer<Runnable> onEngine) {
    Map<Long, MemoryDescriptor> byAddress = new ConcurrentHashMap<>();
    onEngine.accept(() -> handoff.relocateKv(bytes -> {
      RegisteredMemory memory = agent.allocate(bytes);
      byAddress.put(memory.segment().address(), memory.descriptor());
      return memory.segment();
    }));
    return new WorkerKvTransfer(agent, handoff, byAddress, timeout);
  }

  public TransferAgent agent() {
    return agent;
  }

  public KvHandoff handoff() {
    return handoff;
  }

  public Duration timeout() {
    return timeout;
  }

  public MemoryDescriptor keys(int layer) {
    return keys[layer];
  }

  public MemoryDescriptor values(int layer) {
    return values[layer];
  }

  public MemoryDescriptor probe() {
    return probe;
  }

  /** A transfer descriptor as the record the wire mappers know. */
  public static KvRegionRef ref(MemoryDescriptor d) {
    return new KvRegionRef(d.agentAddress(), d.regionId(), d.offset(), d.length());
  }

  public static KvRegion toProto(MemoryDescriptor d) {
    return ToWire.region(ref(d));
  }

  public static MemoryDescriptor fromProto(KvRegion r) {
    KvRegionRef ref = FromWire.region(r);
    return new MemoryDescriptor(ref.agentAddress(), ref.regionId(), ref.offset(), ref.length());
  }

  /** A pull into this worker completed: {@code bytes} read over {@code nanos} (first layer to last byte). */
  public void recordPull(long bytes, long nanos) {
    pulledBytes.add(bytes);
    pullNanos.add(nanos);
    pulls.increment();
  }

  /** KV bytes pulled into this worker so far. */
  public long pulledBytes() {
    return pulledBytes.sum();
  }

  /** Seconds spent pulling, summed over pulls. */
  public double pullSeconds() {
    return pullNanos.sum() / 1e9;
  }

  public long pulls() {
    return pulls.sum();
  }

  /** Frees the KV memory too: only after the engine closed. */
  @Override
  public void close() {
    agent.close();
  }
}
