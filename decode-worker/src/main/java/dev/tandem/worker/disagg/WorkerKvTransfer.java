package dev.tandem.worker.disagg;

import dev.tandem.engine.KvHandoff;
import dev.tandem.proto.worker.v1.KvRegion;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.TransferAgent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * A worker's side of KV transfer: its agent, the engine's KV cache registered with it (one region
 * per layer for keys and one for values), and a probe region peers read to measure the link.
 *
 * <p>Ownership: owns the agent and the probe buffer; the KV memory stays the engine's, and this is
 * closed before the engine. Thread-safe.
 */
public final class WorkerKvTransfer implements AutoCloseable {
  /** Bytes of the region peers read to measure the link (largest probe read). */
  public static final long PROBE_BYTES = 64L << 20;

  private final TransferAgent agent;
  private final KvHandoff handoff;
  private final MemoryDescriptor[] keys;
  private final MemoryDescriptor[] values;
  private final Arena probeArena = Arena.ofShared();
  private final MemoryDescriptor probe;
  private final Duration timeout;

  /**
   * Registers {@code handoff}'s KV memory with {@code agent}.
   *
   * @param timeout bound on one request's prefill and pull, and on a prefill worker's hold
   */
  public WorkerKvTransfer(TransferAgent agent, KvHandoff handoff, Duration timeout) {
    this.agent = agent;
    this.handoff = handoff;
    this.timeout = timeout;
    this.keys = new MemoryDescriptor[handoff.layers()];
    this.values = new MemoryDescriptor[handoff.layers()];
    for (int l = 0; l < keys.length; l++) {
      keys[l] = agent.register(handoff.keys(l));
      values[l] = agent.register(handoff.values(l));
    }
    MemorySegment probeMemory = probeArena.allocate(PROBE_BYTES, 64);
    this.probe = agent.register(probeMemory);
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

  public static KvRegion toProto(MemoryDescriptor d) {
    return KvRegion.newBuilder()
        .setAgentAddress(d.agentAddress())
        .setRegionId(d.regionId())
        .setOffset(d.offset())
        .setLength(d.length())
        .build();
  }

  public static MemoryDescriptor fromProto(KvRegion r) {
    return new MemoryDescriptor(r.getAgentAddress(), r.getRegionId(), r.getOffset(), r.getLength());
  }

  @Override
  public void close() {
    agent.close();
    probeArena.close();
  }
}
