package dev.tandem.transfer.ucx;

import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.Regions;
import dev.tandem.transfer.RegisteredMemory;
import dev.tandem.transfer.TransferAgent;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpMemMapParams;
import org.openucx.jucx.ucp.UcpMemory;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads remote registered memory with UCX RMA gets. Registering maps a segment with UCP and keeps
 * its packed remote key; the agent's address is its side channel ({@code host:port}), where a
 * reader fetches the UCP worker address once per peer and a region's base address, length and key
 * for every read (so a deregistered region fails the next read). Before a read completes, the
 * reader pings the owner over the same channel: a peer that went away during the transfer makes
 * the read fail instead of returning bytes of unknown state.
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
 * <p>Thread-safe. UCX calls and completion callbacks run on the agent's worker thread; listeners
 * run there too, so they must be quick.
 */
public final class UcxTransferAgent implements TransferAgent {
  private static final Logger log = LoggerFactory.getLogger(UcxTransferAgent.class);
  private static final int OP_HELLO = 1;
  private static final int OP_REGION = 2;
  private static final int OP_PING = 3;
  private static final int OP_WATCH = 4;
  private static final int OP_INVALIDATE = 5;
  /** A reader is about to read: the owner's worker should poll (no answer). */
  private static final int OP_POKE = 6;
  /** Gets in flight per read: enough to fill the link, few enough to notice a dead peer. */
  private static final int WINDOW = 8;
  private static final int SIDE_CHANNEL_TIMEOUT_MS = 10_000;
  /** After a timeout, how long gets still in flight may take to end before they are given up. */
  private static final Duration GRACE = Duration.ofSeconds(2);
  /** This process's node as shared memory sees it; equal strings can share memory. */
  static final String NODE = nodeKey();

  private final UcxWorkerThread ucx;
  private final boolean sharedMemoryPath;
  private final ServerSocket sideChannel;
  private final String address;
  private final Map<Long, UcpMemory> mapped = new ConcurrentHashMap<>();
  private final Regions regions = new Regions();
  private final Set<Socket> accepted = ConcurrentHashMap.newKeySet();
  private final Set<Watcher> watchers = ConcurrentHashMap.newKeySet();
  /** Regions this agent allocated (see {@link #allocate}). */
  private final Set<Long> owned = ConcurrentHashMap.newKeySet();
  private final Map<String, Peer> peers = new ConcurrentHashMap<>();
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
    this.sharedMemoryPath = sharedMemory;
    this.ucx = new UcxWorkerThread("ucx-worker");
    try {
      this.sideChannel = new ServerSocket();
      sideChannel.bind(new InetSocketAddress(InetAddress.getByName(host), 0));
    } catch (IOException e) {
      ucx.close();
      throw new IllegalStateException("cannot open the UCX agent's side channel on " + host, e);
    }
    this.address = host + ":" + sideChannel.getLocalPort();
    Thread.ofVirtual().name("ucx-side-channel").start(this::acceptLoop);
  }

  private static String nodeKey() {
    try {
      return Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim()
          + "/" + Files.readSymbolicLink(Path.of("/proc/self/ns/ipc"))
          + "/" + Files.readSymbolicLink(Path.of("/proc/self/ns/pid"));
    } catch (IOException | RuntimeException e) {
      return "unknown-" + UUID.randomUUID(); // never equal: no shared memory
    }
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
      for (Watcher w : watchers) {
        w.invalidate(region.regionId());
      }
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
    CompletableFuture<Void> result = new CompletableFuture<>();
    Read read = new Read(remote, local, listener, result);
    var deadline = timer.schedule(() -> {
      TimeoutException late = new TimeoutException("UCX read of " + remote.size() + " descriptors took longer than " + timeout);
      onWorker(() -> read.fail(late));
      // Gets that neither end nor fail (a shared-memory peer that stopped answering) are given up.
      timer.schedule(() -> onWorker(() -> read.giveUp(null, late.getMessage())), GRACE.toNanos(), TimeUnit.NANOSECONDS);
    }, timeout.toNanos(), TimeUnit.NANOSECONDS);
    result.whenComplete((v, e) -> deadline.cancel(false));
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
  private void onWorker(Runnable task) {
    try {
      ucx.execute(task);
    } catch (IllegalStateException closing) {
      // reads were failed by close()
    }
  }

  /**
   * One read: resolves regions over the side channel, then keeps WINDOW gets in flight. State
   * after the resolve phase changes on the worker thread only. The future completes once nothing
   * more can land in {@code local}: after every get ended, or after the peer is known gone and its
   * replies were drained, or, for a peer that neither answers nor goes away, after a grace period.
   */
  private final class Read {
    private final List<MemoryDescriptor> remote;
    private final List<MemorySegment> local;
    private final TransferListener listener;
    private final CompletableFuture<Void> result;
    private final long[] remoteAddress;
    private final UcpRemoteKey[] keys;
    private final Peer[] owners;
    private final List<Peer> usedPeers = new CopyOnWriteArrayList<>();
    // Worker thread only from here on.
    private final Set<Get> inFlight = new HashSet<>();
    private int next;
    private int done;
    private Throwable failure;

    Read(List<MemoryDescriptor> remote, List<MemorySegment> local, TransferListener listener, CompletableFuture<Void> result) {
      this.remote = remote;
      this.local = local;
      this.listener = listener;
      this.result = result;
      this.remoteAddress = new long[remote.size()];
      this.keys = new UcpRemoteKey[remote.size()];
      this.owners = new Peer[remote.size()];
    }

    void run() throws IOException {
      result.whenComplete((v, e) -> usedPeers.forEach(p -> p.active.remove(this)));
      // Resolve every descriptor: its peer's region (address, length, key; cached per peer).
      for (int i = 0; i < remote.size(); i++) {
        MemoryDescriptor d = remote.get(i);
        Peer peer = peer(d.agentAddress());
        if (!usedPeers.contains(peer)) {
          usedPeers.add(peer);
          peer.active.add(this);
          peer.poke();
        }
        RegionInfo info = peer.region(d.regionId());
        if (d.offset() + d.length() > info.length) {
          throw new IllegalArgumentException(
              "range [" + d.offset() + ", " + (d.offset() + d.length()) + ") is outside region " + d.regionId()
                  + " of " + info.length + " bytes");
        }
        remoteAddress[i] = info.base + d.offset();
        keys[i] = info.key;
        owners[i] = peer;
      }
      // Destinations are not registered: UCX registers (and caches) what its protocol needs.
      ucx.call(() -> {
        if (failure != null) {
          settle(); // timed out while resolving
          return null;
        }
        for (int k = 0; k < Math.min(WINDOW, remote.size()); k++) {
          issueNext();
        }
        return null;
      });
      if (remote.isEmpty()) {
        finish();
      }
    }

    /** One get in flight; its request is cancelled (where UCX can) when the read fails. */
    private final class Get {
      final int index;
      UcpRequest request;

      Get(int index) {
        this.index = index;
      }
    }

    /** On the worker thread: starts the next descriptor's get, if any is left and all is well. */
    private void issueNext() {
      if (failure != null || next >= remote.size()) {
        return;
      }
      Get get = new Get(next++);
      int i = get.index;
      inFlight.add(get);
      ucx.inFlight.incrementAndGet();
      get.request = owners[i].endpoint.getNonBlocking(
          remoteAddress[i], keys[i], local.get(i).address(), local.get(i).byteSize(),
          new UcxCallback() {
            @Override
            public void onSuccess(UcpRequest r) {
              if (!ended(get)) {
                return;
              }
              if (failure != null) {
                settle();
                return;
              }
              if (listener != null) {
                listener.descriptorDone(i);
              }
              if (++done == remote.size()) {
                Thread.ofVirtual().start(Read.this::finish);
              } else {
                issueNext();
              }
            }

            @Override
            public void onError(int status, String message) {
              if (ended(get)) {
                fail(new IOException("UCX get of descriptor " + i + " failed: " + message + " (" + status + ")"));
              }
            }
          });
    }

    /** A get ended; false if it had been given up on already. */
    private boolean ended(Get get) {
      if (!inFlight.remove(get)) {
        return false;
      }
      ucx.inFlight.decrementAndGet();
      return true;
    }

    /** On the worker thread: stops issuing and completes once nothing is in flight. */
    void fail(Throwable cause) {
      if (failure == null) {
        failure = cause;
        for (Get g : inFlight) {
          if (g.request != null && !g.request.isCompleted()) {
            ucx.worker().cancelRequest(g.request);
          }
        }
      }
      settle();
    }

    private void settle() {
      if (failure != null && inFlight.isEmpty() && !result.isDone()) {
        result.completeExceptionally(failure);
      }
    }

    /**
     * On the worker thread, for gets that will never end (their peer is gone, or neither answers
     * nor goes away): stops waiting for them.
     */
    void giveUp(Peer peer, String why) {
      int before = inFlight.size();
      inFlight.removeIf(g -> peer == null || owners[g.index] == peer);
      int gone = before - inFlight.size();
      if (gone > 0) {
        ucx.inFlight.addAndGet(-gone);
        lostGets.addAndGet(gone);
        log.warn("UCX read gave up on {} gets that never ended ({})", gone, why);
      }
      fail(new IOException(why));
    }

    /** Every byte landed: the owner must still be there, or the bytes are of unknown state. */
    private void finish() {
      try {
        for (Peer p : usedPeers) {
          p.ping();
        }
        result.complete(null);
      } catch (IOException e) {
        result.completeExceptionally(new IOException("the peer went away during the transfer: " + e.getMessage(), e));
      }
    }
  }

  /** A peer's region as a reader knows it: base address, length, and the unpacked remote key. */
  private record RegionInfo(long base, long length, UcpRemoteKey key) {}

  /** A remote agent: its side-channel connection and our endpoint to its worker. */
  private final class Peer {
    private final String agentAddress;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final UcpEndpoint endpoint;
    /** Same node: the endpoint reads over shared memory, without UCX's peer-error handling. */
    private final boolean sharedMemory;
    private final Socket watch;
    final Set<Read> active = ConcurrentHashMap.newKeySet();
    /** Regions resolved so far; the owner invalidates one over the watch connection before it goes. */
    private final Map<Long, RegionInfo> regions = new ConcurrentHashMap<>();

    Peer(String agentAddress) throws IOException {
      this.agentAddress = agentAddress;
      int colon = agentAddress.lastIndexOf(':');
      String host = agentAddress.substring(0, colon);
      int port = Integer.parseInt(agentAddress.substring(colon + 1));
      socket = connect(host, port);
      // A second connection the owner never answers on: it ends when the owner does.
      watch = connect(host, port);
      socket.setSoTimeout(SIDE_CHANNEL_TIMEOUT_MS);
      in = new DataInputStream(socket.getInputStream());
      out = new DataOutputStream(socket.getOutputStream());
      byte[] workerAddress;
      String ownerNode;
      synchronized (this) {
        out.writeByte(OP_HELLO);
        out.writeUTF(sharedMemoryPath ? NODE : "");
        out.flush();
        ownerNode = in.readUTF();
        workerAddress = new byte[in.readInt()];
        in.readFully(workerAddress);
      }
      sharedMemory = sharedMemoryPath && ownerNode.equals(NODE);
      ByteBuffer buf = ByteBuffer.allocateDirect(workerAddress.length).put(workerAddress).flip();
      UcpEndpointParams params = new UcpEndpointParams().setUcpAddress(buf);
      if (sharedMemory) {
        // Same kernel, IPC and PID namespaces: UCX picks shared memory, which it offers only
        // without peer-error handling. A vanished peer is then noticed on the watch connection.
        usedSharedMemory = true;
      } else {
        // Across nodes: peer-error handling, so that gets to a vanished peer can be failed by
        // force-closing the endpoint instead of hanging.
        params.setPeerErrorHandlingMode().setErrorHandler((ep, status, message) -> {});
      }
      endpoint = ucx.call(() -> ucx.worker().newEndpoint(params));
      Thread.ofVirtual().name("ucx-watch-" + agentAddress).start(this::watch);
    }

    /**
     * The watch connection: the owner announces deregistered regions on it (each acknowledged once
     * forgotten here) and closes it when it goes.
     */
    private void watch() {
      try {
        DataOutputStream w = new DataOutputStream(watch.getOutputStream());
        DataInputStream r = new DataInputStream(watch.getInputStream());
        w.writeByte(OP_WATCH);
        w.flush();
        while (r.readByte() == OP_INVALIDATE) {
          // Forgotten, not closed: a read may still hold the key (a few bytes are left to the GC).
          regions.remove(r.readLong());
          w.writeByte(OP_INVALIDATE);
          w.flush();
        }
      } catch (IOException ignored) {
        // closed: the owner went away, or we did
      }
      if (!closed) {
        gone("the peer " + agentAddress + " went away during the transfer");
      }
    }

    /**
     * The owner is gone (or given up on): fails its reads. Over shared memory, replies it wrote
     * before going are drained first, then its gets are given up; otherwise force-closing the
     * endpoint fails them (UCS_ERR_CANCELED).
     */
    void gone(String why) {
      peers.remove(agentAddress, this);
      close();
      try {
        ucx.execute(() -> {
          if (sharedMemory) {
            try {
              for (int k = 0; k < 100 && ucx.worker().progress() > 0; k++) {
                // drain what already arrived
              }
            } catch (Exception ignored) {
              // giving up anyway
            }
            active.forEach(r -> r.giveUp(this, why));
          } else {
            active.forEach(r -> r.fail(new IOException(why)));
            endpoint.closeNonBlockingForce();
          }
        });
      } catch (IllegalStateException agentClosed) {
        // nothing left to fail
      }
    }

    /** A region of this peer, asked for over the side channel the first time. */
    RegionInfo region(long id) throws IOException {
      RegionInfo known = regions.get(id);
      return known != null ? known : fetch(id);
    }

    private synchronized RegionInfo fetch(long id) throws IOException {
      RegionInfo known = regions.get(id);
      if (known != null) {
        return known;
      }
      out.writeByte(OP_REGION);
      out.writeLong(id);
      out.flush();
      if (in.readByte() != 0) {
        throw new IllegalArgumentException("region " + id + " is not registered at " + socket.getRemoteSocketAddress());
      }
      long base = in.readLong();
      long length = in.readLong();
      byte[] rkey = new byte[in.readInt()];
      in.readFully(rkey);
      ByteBuffer packed = ByteBuffer.allocateDirect(rkey.length).put(rkey).flip();
      RegionInfo info = new RegionInfo(base, length, ucx.call(() -> endpoint.unpackRemoteKey(packed)));
      regions.put(id, info);
      return info;
    }

    synchronized void poke() throws IOException {
      out.writeByte(OP_POKE);
      out.flush();
    }

    synchronized void ping() throws IOException {
      out.writeByte(OP_PING);
      out.flush();
      if (in.readByte() != OP_PING) {
        throw new IOException("bad ping reply");
      }
    }

    void close() {
      try {
        socket.close();
        watch.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
  }

  private static Socket connect(String host, int port) throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress(host, port), SIDE_CHANNEL_TIMEOUT_MS);
    s.setTcpNoDelay(true);
    return s;
  }

  private Peer peer(String agentAddress) throws IOException {
    Peer p = peers.get(agentAddress);
    if (p == null) {
      synchronized (peers) {
        p = peers.get(agentAddress);
        if (p == null) {
          p = new Peer(agentAddress);
          peers.put(agentAddress, p);
        }
      }
    }
    return p;
  }

  // ---- the side channel, owner side ---------------------------------------------------------

  /** A reader's watch connection, as the owner holds it. */
  private static final class Watcher {
    private final DataOutputStream out;
    final Semaphore acks = new Semaphore(0);

    Watcher(DataOutputStream out) {
      this.out = out;
    }

    /** Tells the reader to forget a region and waits (briefly) for it to have done so. */
    synchronized void invalidate(long regionId) {
      try {
        out.writeByte(OP_INVALIDATE);
        out.writeLong(regionId);
        out.flush();
        if (!acks.tryAcquire(SIDE_CHANNEL_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
          log.warn("a UCX reader did not acknowledge that region {} is gone within {} ms", regionId, SIDE_CHANNEL_TIMEOUT_MS);
        }
      } catch (IOException e) {
        // the reader is gone: nothing to forget
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket s = sideChannel.accept();
        accepted.add(s);
        Thread.ofVirtual().start(() -> serve(s));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void serve(Socket s) {
    try (s) {
      s.setTcpNoDelay(true);
      DataInputStream in = new DataInputStream(s.getInputStream());
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      while (!closed) {
        int op = in.readByte();
        switch (op) {
          case OP_HELLO -> {
            String readerNode = in.readUTF();
            if (sharedMemoryPath && readerNode.equals(NODE)) {
              usedSharedMemory = true; // the reader's endpoint to us has no peer-error handling
              out.writeUTF(NODE);
            } else {
              out.writeUTF("");
            }
            ByteBuffer a = ucx.call(() -> ucx.worker().getAddress());
            byte[] bytes = new byte[a.remaining()];
            a.get(bytes);
            out.writeInt(bytes.length);
            out.write(bytes);
          }
          case OP_REGION -> {
            long id = in.readLong();
            UcpMemory m = mapped.get(id);
            if (m == null) {
              out.writeByte(1);
            } else {
              ByteBuffer key = ucx.call(m::getRemoteKeyBuffer);
              byte[] bytes = new byte[key.remaining()];
              key.get(bytes);
              out.writeByte(0);
              out.writeLong(m.getAddress());
              out.writeLong(m.getLength());
              out.writeInt(bytes.length);
              out.write(bytes);
            }
          }
          case OP_PING -> out.writeByte(OP_PING);
          case OP_POKE -> ucx.poke();
          case OP_WATCH -> {
            // Held open until this agent or the reader closes; carries invalidations and their acks.
            Watcher w = new Watcher(out);
            watchers.add(w);
            try {
              while (!closed && in.read() == OP_INVALIDATE) {
                w.acks.release();
              }
            } finally {
              watchers.remove(w);
            }
            return;
          }
          default -> throw new IOException("unknown side-channel op " + op);
        }
        out.flush();
      }
    } catch (IOException e) {
      // peer closed or we are closing
    } finally {
      accepted.remove(s);
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    // Reads still running fail first; gets that end soon are let end, the rest given up.
    try {
      ucx.call(() -> {
        for (Peer p : peers.values()) {
          p.active.forEach(r -> r.fail(new IOException("the reading agent is closing")));
        }
        try {
          for (int k = 0; k < 1000 && ucx.inFlight.get() > 0; k++) {
            ucx.worker().progress();
          }
        } catch (Exception e) {
          // closing anyway
        }
        for (Peer p : peers.values()) {
          p.active.forEach(r -> r.giveUp(p, "the reading agent is closing"));
        }
        return null;
      });
    } catch (RuntimeException ignored) {
      // the worker is gone already
    }
    closed = true;
    try {
      sideChannel.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    for (Socket s : accepted) {
      try {
        s.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
    peers.values().forEach(Peer::close);
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
