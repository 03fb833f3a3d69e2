package dev.tandem.transfer.ucx;

import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.Regions;
import dev.tandem.transfer.RegisteredMemory;
import dev.tandem.transfer.TransferAgent;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import dev.tandem.transfer.TransferTls;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads remote registered memory with UCX RMA gets. Registering maps a segment with UCP and keeps
 * its packed remote key; the agent's address is its side channel ({@code host:port}), where a
 * reader fetches the UCP worker address once per peer and a region's base address, length and key
 * once (cached until the owner invalidates it, so a deregistered region fails the next read). A
 * read whose peers and regions are all known starts its gets from the caller's thread, with no
 * side-channel call; it pokes the owner first only where the owner's worker must serve the gets
 * (registered process memory, or a peer on another node). A peer that went away during the
 * transfer makes the read fail: its gets fail or never complete (and are given up when the watch
 * connection ends), never complete with bytes the owner did not hold.
 *
 * <p>Peers on the same node (same kernel boot, IPC and PID namespaces) read over shared memory:
 * UCX 1.13 offers its shared-memory transports only to endpoints without peer-error handling, and
 * they are ~10× faster than its tcp transport on loopback. Such endpoints cannot fail gets to a
 * vanished peer, so a second side-channel connection watches the owner; when it ends, replies
 * already delivered are drained and the remaining gets are given up, and the agent, once closed,
 * leaves its UCP worker to the process's exit instead of destroying it under endpoints UCX cannot
 * flush. Peers on other nodes get peer-error handling (their gets fail when the endpoint is
 * force-closed).
 *
 * <p>The parts: {@link UcxSideChannelServer} answers readers (owner side), {@link UcxPeer} is a
 * reader's connection to one owner with its region cache, {@link UcxRead} is one read's state
 * machine, {@link UcxWorkerThread} owns the UCP worker.
 *
 * <p>Thread-safe. UCX calls and completion callbacks run on the agent's worker thread; listeners
 * run there too, so they must be quick.
 */
public final class UcxTransferAgent implements TransferAgent {
  private static final Logger log = LoggerFactory.getLogger(UcxTransferAgent.class);
  /** After a timeout, how long gets still in flight may take to end before they are given up. */
  private static final Duration GRACE = Duration.ofSeconds(2);
  /** This process's node as shared memory sees it; equal strings can share memory. */
  static final String NODE = UcxSideChannel.NODE;

  private final UcxWorkerThread ucx;
  private final boolean sharedMemoryPath;
  private final TransferTls tls; // null: plain side channel
  private final UcxSideChannelServer sideChannel;
  private final String address;
  private final Map<Long, UcpMemory> mapped = new ConcurrentHashMap<>();
  private final Regions regions = new Regions();
  /** Regions this agent allocated (see {@link #allocate}). */
  private final Set<Long> owned = ConcurrentHashMap.newKeySet();
  private final Map<String, UcxPeer> peers = new ConcurrentHashMap<>();
  private final AtomicLong lostGets = new AtomicLong();
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("ucx-timeouts").factory());
  /** Some endpoint, ours or a reader's to us, ran without peer-error handling. */
  private volatile boolean usedSharedMemory;
  private volatile boolean closed;

  /** An agent that reads over shared memory from peers on its node. */
  public UcxTransferAgent(String host) {
    this(host, true);
  }

  /**
   * @param sharedMemory whether peers on this node are read over shared memory (fast, see the
   *     class comment) or, like remote peers, with peer-error handling (UCX's tcp transport here)
   */
  public UcxTransferAgent(String host, boolean sharedMemory) {
    this(host, 0, sharedMemory);
  }

  /** Its side channel on {@code host:port} (0: any free port), plain TCP; see the full constructor. */
  public UcxTransferAgent(String host, int port, boolean sharedMemory) {
    this(host, port, sharedMemory, null);
  }

  /**
   * Its side channel on {@code host:port} (0: any free port), under mutual TLS when {@code tls}
   * is not null. UCX's own transports pick their ports, on the network device that holds {@code
   * host} (and the RDMA devices) only, unless {@code UCX_NET_DEVICES} says otherwise.
   */
  public UcxTransferAgent(String host, int port, boolean sharedMemory, TransferTls tls) {
    this.sharedMemoryPath = sharedMemory;
    this.tls = tls;
    this.ucx = new UcxWorkerThread("ucx-worker", UcxNetDevices.forHost(host));
    ServerSocket socket;
    try {
      socket = tls == null ? new ServerSocket() : tls.serverSocket();
      socket.bind(new InetSocketAddress(InetAddress.getByName(host), port));
    } catch (IOException e) {
      ucx.close();
      throw new IllegalStateException("cannot open the UCX agent's side channel on " + host + (port == 0 ? "" : ":" + port), e);
    }
    this.address = host + ":" + socket.getLocalPort();
    this.sideChannel = new UcxSideChannelServer(this, socket);
    Thread.ofVirtual().name("ucx-side-channel").start(sideChannel::acceptLoop);
  }

  // ---- for the agent's parts (UcxRead, UcxPeer, UcxSideChannelServer) ----

  UcxWorkerThread ucx() {
    return ucx;
  }

  boolean sharedMemoryPath() {
    return sharedMemoryPath;
  }

  /** Some endpoint, ours or a reader's to us, runs without peer-error handling. */
  void usedSharedMemory() {
    usedSharedMemory = true;
  }

  boolean isClosed() {
    return closed;
  }

  /** The UCP mapping of a region this agent registered, or null when unknown or {@code key} is not its key. */
  UcpMemory mapped(long regionId, long key) {
    return regions.matches(regionId, key) ? mapped.get(regionId) : null;
  }

  /** Whether this agent allocated region {@code regionId} (see {@link #allocate}). */
  boolean allocated(long regionId) {
    return owned.contains(regionId);
  }

  /** Side-channel requests this agent has served as an owner: what a read costs its owner. */
  long sideChannelRequests() {
    return sideChannel.requests();
  }

  /** The peer at {@code agentAddress} if connected already; null otherwise (never connects). */
  UcxPeer knownPeer(String agentAddress) {
    return peers.get(agentAddress);
  }

  /** Mutual TLS for the side channel; null: plain TCP. */
  TransferTls tls() {
    return tls;
  }

  void lostGet(int count) {
    lostGets.addAndGet(count);
  }

  /** Drops a peer that went away (a later read connects afresh). */
  void forget(String agentAddress, UcxPeer peer) {
    peers.remove(agentAddress, peer);
  }

  /** Gets given up on since this agent started (their peer vanished or never answered). */
  public long lostGets() {
    return lostGets.get();
  }

  @Override
  public String backend() {
    return "ucx";
  }

  @Override
  public String address() {
    return address;
  }

  @Override
  public MemoryDescriptor register(MemorySegment segment) {
    Regions.requireNative(segment, "ucx");
    UcpMemory memory =
        ucx.call(() -> ucx.context().memoryMap(new UcpMemMapParams().setAddress(segment.address()).setLength(segment.byteSize())));
    MemoryDescriptor d = regions.add(address, segment);
    mapped.put(d.regionId(), memory);
    return d;
  }

  /**
   * UCX allocates the memory itself (its shared-memory segments where it can): a reader on this
   * node then copies straight out of it, without this agent's worker, at up to twice the speed of
   * registered memory the process allocated (docs/benchmarks.md). Freed when the agent closes
   * (when it destroys its worker; an agent that used shared memory leaves it to the process exit).
   */
  @Override
  public RegisteredMemory allocate(long bytes) {
    UcpMemory memory = ucx.call(() -> ucx.context().memoryMap(new UcpMemMapParams().allocate().setLength(bytes)));
    if (memory.getAddress() % 64 != 0) {
      ucx.call(() -> {
        memory.deregister();
        return null;
      });
      throw new IllegalStateException("UCX allocated memory that is not 64-byte aligned");
    }
    MemorySegment segment = MemorySegment.ofAddress(memory.getAddress()).reinterpret(bytes);
    MemoryDescriptor d = regions.add(address, segment);
    mapped.put(d.regionId(), memory);
    owned.add(d.regionId());
    return new RegisteredMemory(segment, d);
  }

  @Override
  public void deregister(MemoryDescriptor region) {
    if (owned.contains(region.regionId())) {
      throw new IllegalArgumentException("region " + region.regionId() + " was allocated by the agent; it is freed when the agent closes");
    }
    regions.remove(region);
    UcpMemory memory = mapped.remove(region.regionId());
    if (memory != null) {
      // Readers cache regions; each forgets this one (and says so) before it is unmapped.
      sideChannel.invalidate(region.regionId());
      ucx.call(() -> {
        memory.deregister();
        return null;
      });
    }
  }

  @Override
  public CompletableFuture<Void> read(
      List<MemoryDescriptor> remote, List<MemorySegment> local, Duration timeout, TransferListener listener) {
    Regions.checkPairs(remote, local);
    local.forEach(s -> Regions.requireNative(s, "ucx"));
    CompletableFuture<Void> result = new SpinningFuture<>(); // a blocked caller spins before it parks
    UcxRead read = new UcxRead(this, remote, local, listener, result);
    var deadline = timer.schedule(() -> {
      TimeoutException late = new TimeoutException("UCX read of " + remote.size() + " descriptors took longer than " + timeout);
      onWorker(() -> read.fail(late));
      // Gets that neither end nor fail (a shared-memory peer that stopped answering) are given up.
      timer.schedule(() -> onWorker(() -> read.giveUp(null, late.getMessage())), GRACE.toNanos(), TimeUnit.NANOSECONDS);
    }, timeout.toNanos(), TimeUnit.NANOSECONDS);
    result.whenComplete((v, e) -> deadline.cancel(false));
    try {
      if (read.startKnown()) {
        return result; // every peer and region known: no side-channel call, no hand-off
      }
    } catch (IOException | RuntimeException e) {
      onWorker(() -> read.fail(e));
      return result;
    }
    Thread.ofVirtual().start(() -> {
      try {
        read.run();
      } catch (Throwable t) {
        onWorker(() -> read.fail(t));
      }
    });
    return result;
  }

  /** Runs {@code task} on the worker thread, unless the agent has closed. */
  void onWorker(Runnable task) {
    try {
      ucx.execute(task);
    } catch (IllegalStateException closing) {
      // reads were failed by close()
    }
  }

  /** The peer at {@code agentAddress}, connected on first use. */
  UcxPeer peer(String agentAddress) throws IOException {
    UcxPeer p = peers.get(agentAddress);
    if (p == null) {
      synchronized (peers) {
        p = peers.get(agentAddress);
        if (p == null) {
          p = new UcxPeer(this, agentAddress);
          peers.put(agentAddress, p);
        }
      }
    }
    return p;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    // Reads still running fail first; gets that end soon are let end, the rest given up.
    try {
      ucx.call(() -> {
        for (UcxPeer p : peers.values()) {
          p.active.forEach(r -> r.fail(new IOException("the reading agent is closing")));
        }
        try {
          for (int k = 0; k < 1000 && ucx.inFlight.get() > 0; k++) {
            ucx.worker().progress();
          }
        } catch (Exception e) {
          // closing anyway
        }
        for (UcxPeer p : peers.values()) {
          p.active.forEach(r -> r.giveUp(p, "the reading agent is closing"));
        }
        return null;
      });
    } catch (RuntimeException ignored) {
      // the worker is gone already
    }
    closed = true;
    sideChannel.close();
    peers.values().forEach(UcxPeer::close);
    timer.shutdownNow();
    if (usedSharedMemory || lostGets.get() > 0) {
      log.debug("UCX agent {} closes without destroying its worker (shared memory used: {}, gets given up: {})",
          address, usedSharedMemory, lostGets.get());
      ucx.abandon();
      return;
    }
    try {
      ucx.call(() -> {
        mapped.values().forEach(UcpMemory::deregister);
        mapped.clear();
        return null;
      });
    } catch (RuntimeException ignored) {
      // the worker is gone already
    }
    ucx.close();
  }
}
