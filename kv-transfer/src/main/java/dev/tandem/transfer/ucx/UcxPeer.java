package dev.tandem.transfer.ucx;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpRemoteKey;

/**
 * A reader's view of one remote agent: the side-channel connection (regions, pokes), the
 * watch connection (invalidations, and the owner going away), our UCP endpoint to its worker, and
 * the regions resolved so far. A peer on this node is read over shared memory, without UCX's
 * peer-error handling; when it goes, replies already delivered are drained and its gets given up.
 *
 * <p>Thread-safe: side-channel calls are serialized on the peer; endpoint work runs on the agent's
 * worker thread.
 */
final class UcxPeer {
  /**
   * A peer's region as a reader knows it: base address, length, the unpacked remote key, and the
   * region key it was asked for with (a read with another key asks the owner again, and fails),
   * and whether the owner's agent allocated it (then a reader on its node copies it without the
   * owner's worker).
   */
  record RegionInfo(long base, long length, UcpRemoteKey key, long regionKey, boolean allocated) {}

  private final UcxTransferAgent agent;
  private final UcxWorkerThread ucx;
  private final String agentAddress;
  private final Socket socket;
  private final DataInputStream in;
  private final DataOutputStream out;
  final UcpEndpoint endpoint; // used by reads on the worker thread
  /** Same node: the endpoint reads over shared memory, without UCX's peer-error handling. */
  private final boolean sharedMemory;
  private final Socket watch;
  final Set<UcxRead> active = ConcurrentHashMap.newKeySet();
  /** Set once the owner is known gone: reads that find it set fail rather than wait. */
  private volatile boolean gone;
  /** Regions resolved so far; the owner invalidates one over the watch connection before it goes. */
  private final Map<Long, RegionInfo> regions = new ConcurrentHashMap<>();

  UcxPeer(UcxTransferAgent agent, String agentAddress) throws IOException {
    this.agent = agent;
    this.ucx = agent.ucx();
    this.agentAddress = agentAddress;
    int colon = agentAddress.lastIndexOf(':');
    String host = agentAddress.substring(0, colon);
    int port = Integer.parseInt(agentAddress.substring(colon + 1));
    socket = UcxSideChannel.connect(host, port, agent.tls());
    // A second connection the owner never answers on: it ends when the owner does.
    watch = UcxSideChannel.connect(host, port, agent.tls());
    socket.setSoTimeout(UcxSideChannel.TIMEOUT_MS);
    in = new DataInputStream(socket.getInputStream());
    out = new DataOutputStream(socket.getOutputStream());
    byte[] workerAddress;
    String ownerNode;
    synchronized (this) {
      out.writeByte(UcxSideChannel.OP_HELLO);
      out.writeUTF(agent.sharedMemoryPath() ? UcxSideChannel.NODE : "");
      out.flush();
      ownerNode = in.readUTF();
      workerAddress = new byte[in.readInt()];
      in.readFully(workerAddress);
    }
    sharedMemory = agent.sharedMemoryPath() && ownerNode.equals(UcxSideChannel.NODE);
    ByteBuffer buf = ByteBuffer.allocateDirect(workerAddress.length).put(workerAddress).flip();
    UcpEndpointParams params = new UcpEndpointParams().setUcpAddress(buf);
    if (sharedMemory) {
      // Same kernel, IPC and PID namespaces: UCX picks shared memory, which it offers only
      // without peer-error handling. A vanished peer is then noticed on the watch connection.
      agent.usedSharedMemory();
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
      w.writeByte(UcxSideChannel.OP_WATCH);
      w.flush();
      while (r.readByte() == UcxSideChannel.OP_INVALIDATE) {
        // Forgotten, not closed: a read may still hold the key (a few bytes are left to the GC).
        regions.remove(r.readLong());
        w.writeByte(UcxSideChannel.OP_INVALIDATE);
        w.flush();
      }
    } catch (IOException ignored) {
      // closed: the owner went away, or we did
    }
    if (!agent.isClosed()) {
      gone("the peer " + agentAddress + " went away during the transfer");
    }
  }

  /**
   * The owner is gone (or given up on): fails its reads. Over shared memory, replies it wrote
   * before going are drained first, then its gets are given up; otherwise force-closing the
   * endpoint fails them (UCS_ERR_CANCELED).
   */
  void gone(String why) {
    gone = true;
    agent.forget(agentAddress, this);
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
  RegionInfo region(long id, long key) throws IOException {
    RegionInfo known = known(id, key);
    return known != null ? known : fetch(id, key);
  }

  /** A region of this peer resolved before (and not invalidated since); null if none. */
  RegionInfo known(long id, long key) {
    RegionInfo known = regions.get(id);
    return known != null && known.regionKey() == key ? known : null;
  }

  /** True once the owner is known gone. */
  boolean isGone() {
    return gone;
  }

  /**
   * Whether a get of {@code region} needs the owner's worker to progress (a poke first): all but
   * memory the owner's agent allocated, read over shared memory, which the reader copies alone.
   */
  boolean needsOwnersWorker(RegionInfo region) {
    return !(sharedMemory && region.allocated());
  }

  private synchronized RegionInfo fetch(long id, long key) throws IOException {
    RegionInfo known = regions.get(id);
    if (known != null && known.regionKey() == key) {
      return known;
    }
    out.writeByte(UcxSideChannel.OP_REGION);
    out.writeLong(id);
    out.writeLong(key);
    out.flush();
    if (in.readByte() != 0) {
      throw new IllegalArgumentException(
          "region " + id + " is not registered at " + socket.getRemoteSocketAddress() + ", or the key is not its key");
    }
    long base = in.readLong();
    long length = in.readLong();
    byte[] rkey = new byte[in.readInt()];
    in.readFully(rkey);
    boolean allocated = in.readBoolean();
    ByteBuffer packed = ByteBuffer.allocateDirect(rkey.length).put(rkey).flip();
    RegionInfo info = new RegionInfo(base, length, ucx.call(() -> endpoint.unpackRemoteKey(packed)), key, allocated);
    regions.put(id, info);
    return info;
  }

  synchronized void poke() throws IOException {
    out.writeByte(UcxSideChannel.OP_POKE);
    out.flush();
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
