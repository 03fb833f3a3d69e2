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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * A worker's side of KV transfer: its agents, the engine's KV cache registered with each (one
 * region per layer for keys and one for values; an agent of GPU memory, {@code cuda-ipc}, gets the
 * engine's device copy of the cache, where it keeps one), and a probe region peers read to measure
 * the link. The primary agent allocates that memory; with {@code --kv-transfer auto} the other
 * available backends register the same memory, so that each peer pair can pull over whichever
 * its link probe found faster.
 *
 * <p>Ownership: owns the agents. The engine's KV cache lives in memory the primary agent allocated
 * (see {@link #create}), as does the probe region, so this is closed after the engine.
 * Thread-safe.
 */
public final class WorkerKvTransfer implements AutoCloseable {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(WorkerKvTransfer.class);

  /** Bytes of the region peers read to measure the link (largest probe read). */
  public static final long PROBE_BYTES = 64L << 20;

  /** One agent over the worker's KV memory, and that memory's descriptors as its peers read them. */
  public static final class Endpoint {
    private final TransferAgent agent;
    private final MemoryDescriptor[] keys;
    private final MemoryDescriptor[] values;
    private final MemoryDescriptor probe;

    private Endpoint(TransferAgent agent, MemoryDescriptor[] keys, MemoryDescriptor[] values, MemoryDescriptor probe) {
      this.agent = agent;
      this.keys = keys;
      this.values = values;
      this.probe = probe;
    }

    public TransferAgent agent() {
      return agent;
    }

    public String backend() {
      return agent.backend();
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
  }

  /** Bytes the commit's host ↔ device copy is timed over at start (where the engine keeps a GPU copy). */
  static final long COMMIT_COPY_PROBE_BYTES = 64L << 20;

  private final List<Endpoint> endpoints; // the primary first
  private final KvHandoff handoff;
  private final Optional<KvHandoff.HostDeviceCopy> commitCopy;
  private final Duration timeout;
  private final java.util.concurrent.atomic.LongAdder pulledBytes = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder pullNanos = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder pulls = new java.util.concurrent.atomic.LongAdder();

  private WorkerKvTransfer(TransferAgent primary, List<TransferAgent> others, KvHandoff handoff, Map<Long, MemoryDescriptor> byAddress,
      Duration timeout, Optional<KvHandoff.HostDeviceCopy> commitCopy) {
    this.handoff = handoff;
    this.commitCopy = commitCopy;
    this.timeout = timeout;
    int layers = handoff.layers();
    MemoryDescriptor[] keys = new MemoryDescriptor[layers];
    MemoryDescriptor[] values = new MemoryDescriptor[layers];
    for (int l = 0; l < layers; l++) {
      keys[l] = descriptor(primary, handoff.keys(l), byAddress);
      values[l] = descriptor(primary, handoff.values(l), byAddress);
    }
    RegisteredMemory probe = primary.allocate(PROBE_BYTES);
    List<Endpoint> all = new ArrayList<>();
    all.add(new Endpoint(primary, keys, values, probe.descriptor()));
    for (TransferAgent other : others) {
      try {
        if (other.deviceMemory() && handoff.deviceKv().isEmpty()) {
          log.info("KV transfer backend {} reads GPU memory, and this worker's engine keeps its KV cache on the CPU;"
              + " running without {} (it needs --compute cuda)", other.backend(), other.backend());
          other.close();
          continue;
        }
        var device = handoff.deviceKv();
        MemoryDescriptor[] k = new MemoryDescriptor[layers];
        MemoryDescriptor[] v = new MemoryDescriptor[layers];
        for (int l = 0; l < layers; l++) {
          // A device agent serves the GPU's copy of the cache (the same layout), a host agent the host cache.
          k[l] = other.register(other.deviceMemory() ? device.get().keys().get(l) : handoff.keys(l));
          v[l] = other.register(other.deviceMemory() ? device.get().values().get(l) : handoff.values(l));
        }
        MemoryDescriptor otherProbe = other.deviceMemory() ? other.allocate(PROBE_BYTES).descriptor() : other.register(probe.segment());
        all.add(new Endpoint(other, k, v, otherProbe));
      } catch (RuntimeException e) {
        log.warn("KV transfer backend {} cannot serve this worker's KV cache ({}: {}); running without it",
            other.backend(), other.deviceMemory() ? "the GPU's copy" : "memory " + primary.backend() + " allocated", e.getMessage());
        other.close();
      }
    }
    this.endpoints = List.copyOf(all);
  }

  private static MemoryDescriptor descriptor(TransferAgent agent, MemorySegment segment, Map<Long, MemoryDescriptor> byAddress) {
    MemoryDescriptor d = byAddress.get(segment.address());
    return d != null && d.length() == segment.byteSize() ? d : agent.register(segment);
  }

  /**
   * Moves {@code handoff}'s KV cache into memory {@code primary} allocates (where that backend
   * reads it fastest; for ucx, shared memory that readers on the node copy from directly) and
   * registers it with {@code primary} and every agent of {@code others} (an agent that cannot
   * serve that memory is closed and left out, with a warning). Runs the move on the engine's
   * thread through {@code onEngine}, which must return once it ran; the engine must be idle.
   *
   * @param timeout bound on one request's prefill and pull, and on a prefill worker's hold
   */
  public static WorkerKvTransfer create(
      TransferAgent primary, List<TransferAgent> others, KvHandoff handoff, Duration timeout, Consumer<Runnable> onEngine) {
    if (primary.deviceMemory()) {
      throw new IllegalArgumentException("--kv-transfer " + primary.backend() + " reads GPU memory only and cannot hold the"
          + " worker's KV cache, which lives in host memory; use --kv-transfer auto on a --compute cuda worker ("
          + primary.backend() + " then runs beside tcp or ucx, and each pair of workers pulls over the faster)");
    }
    Map<Long, MemoryDescriptor> byAddress = new ConcurrentHashMap<>();
    List<Optional<KvHandoff.HostDeviceCopy>> copy = new ArrayList<>(List.of(Optional.empty()));
    onEngine.accept(() -> {
      handoff.relocateKv(bytes -> {
        RegisteredMemory memory = primary.allocate(bytes);
        byAddress.put(memory.segment().address(), memory.descriptor());
        return memory.segment();
      });
      copy.set(0, handoff.measureHostDeviceCopy(COMMIT_COPY_PROBE_BYTES));
    });
    copy.get(0).ifPresent(c -> log.info("KV copies between the host cache and the GPU's copy at a pull's commit: {} GB/s into the"
        + " device, {} GB/s into the host cache", String.format("%.1f", c.toDeviceBytesPerSecond() / 1e9),
        String.format("%.1f", c.toHostBytesPerSecond() / 1e9)));
    return new WorkerKvTransfer(primary, others, handoff, byAddress, timeout, copy.get(0));
  }

  /** One agent: {@link #create(TransferAgent, List, KvHandoff, Duration, Consumer)} with no others. */
  public static WorkerKvTransfer create(TransferAgent agent, KvHandoff handoff, Duration timeout, Consumer<Runnable> onEngine) {
    return create(agent, List.of(), handoff, timeout, onEngine);
  }

  /** The primary agent. */
  public TransferAgent agent() {
    return endpoints.getFirst().agent();
  }

  /** Every agent, the primary first. */
  public List<Endpoint> endpoints() {
    return endpoints;
  }

  /**
   * The agent for {@code backend} (empty: the primary).
   *
   * @throws IllegalArgumentException naming the backends this worker runs, when it runs no such one
   */
  public Endpoint endpoint(String backend) {
    if (backend == null || backend.isEmpty()) {
      return endpoints.getFirst();
    }
    for (Endpoint e : endpoints) {
      if (e.backend().equals(backend)) {
        return e;
      }
    }
    throw new IllegalArgumentException("this worker runs no '" + backend + "' transfer agent; it runs "
        + endpoints.stream().map(Endpoint::backend).toList());
  }

  public KvHandoff handoff() {
    return handoff;
  }

  public Duration timeout() {
    return timeout;
  }

  public MemoryDescriptor keys(int layer) {
    return endpoints.getFirst().keys(layer);
  }

  public MemoryDescriptor values(int layer) {
    return endpoints.getFirst().values(layer);
  }

  public MemoryDescriptor probe() {
    return endpoints.getFirst().probe();
  }

  /**
   * A pull's throughput over {@code endpoint}, with the copy its commit makes between the host
   * cache and the GPU's copy in series with the link (into the device after a host agent's pull,
   * into the host cache after a device agent's), where the engine keeps a GPU copy; the link's
   * own figure otherwise. What this worker reports for a link, so that the split policy weighs both.
   */
  public double pullBytesPerSecond(Endpoint endpoint, double linkBytesPerSecond) {
    if (commitCopy.isEmpty()) {
      return linkBytesPerSecond;
    }
    KvHandoff.HostDeviceCopy c = commitCopy.get();
    double copy = endpoint.agent().deviceMemory() ? c.toHostBytesPerSecond() : c.toDeviceBytesPerSecond();
    return 1 / (1 / linkBytesPerSecond + 1 / copy);
  }

  /** The commit's host ↔ device copy as measured at start; empty where the engine keeps no GPU copy. */
  public Optional<KvHandoff.HostDeviceCopy> commitCopy() {
    return commitCopy;
  }

  /** A transfer descriptor as the record the wire mappers know. */
  public static KvRegionRef ref(MemoryDescriptor d) {
    return new KvRegionRef(d.agentAddress(), d.regionId(), d.key(), d.offset(), d.length());
  }

  public static KvRegion toProto(MemoryDescriptor d) {
    return ToWire.region(ref(d));
  }

  public static MemoryDescriptor fromProto(KvRegion r) {
    return descriptor(FromWire.region(r));
  }

  /** The transfer descriptor a wire record names. */
  public static MemoryDescriptor descriptor(KvRegionRef ref) {
    return new MemoryDescriptor(ref.agentAddress(), ref.regionId(), ref.key(), ref.offset(), ref.length());
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

  /** Frees the KV memory too: only after the engine closed. The primary, whose memory it is, closes last. */
  @Override
  public void close() {
    for (int i = endpoints.size() - 1; i >= 0; i--) {
      endpoints.get(i).agent().close();
    }
  }
}
