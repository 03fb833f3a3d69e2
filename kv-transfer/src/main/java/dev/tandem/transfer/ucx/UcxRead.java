package dev.tandem.transfer.ucx;

import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.TransferAgent.TransferListener;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpRemoteKey;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One read: resolves regions over the side channel, then keeps WINDOW gets in flight. State
 * after the resolve phase changes on the worker thread only. The future completes once nothing
 * more can land in {@code local}: after every get ended, or after the peer is known gone and its
 * replies were drained, or, for a peer that neither answers nor goes away, after a grace period.
 */
final class UcxRead {
  private static final Logger log = LoggerFactory.getLogger(UcxRead.class);
  /** Gets in flight per read: enough to fill the link, few enough to notice a dead peer. */
  private static final int WINDOW = 8;
  private final UcxTransferAgent agent;
  private final UcxWorkerThread ucx;
  private final List<MemoryDescriptor> remote;
  private final List<MemorySegment> local;
  private final TransferListener listener;
  private final CompletableFuture<Void> result;
  private final long[] remoteAddress;
  private final UcpRemoteKey[] keys;
  private final UcxPeer[] owners;
  private final List<UcxPeer> usedPeers = new CopyOnWriteArrayList<>();
  /** Peers whose worker serves some of the gets: poked before the gets start. */
  private final Set<UcxPeer> toPoke = new HashSet<>();
  // Worker thread only from here on.
  private final Set<Get> inFlight = new HashSet<>();
  private int next;
  private int done;
  private Throwable failure;

  UcxRead(UcxTransferAgent agent, List<MemoryDescriptor> remote, List<MemorySegment> local, TransferListener listener, CompletableFuture<Void> result) {
    this.agent = agent;
    this.ucx = agent.ucx();
    this.remote = remote;
    this.local = local;
    this.listener = listener;
    this.result = result;
    this.remoteAddress = new long[remote.size()];
    this.keys = new UcpRemoteKey[remote.size()];
    this.owners = new UcxPeer[remote.size()];
  }

  /**
   * Resolves every descriptor from what the agent knows already (connected peers, cached regions)
   * and starts the gets, on the calling thread: no side-channel call, one hand-off to the worker
   * thread. False (nothing started) if some peer or region is not known yet: then {@link #run}.
   */
  boolean startKnown() throws IOException {
    for (int i = 0; i < remote.size(); i++) {
      MemoryDescriptor d = remote.get(i);
      UcxPeer peer = agent.knownPeer(d.agentAddress());
      UcxPeer.RegionInfo info = peer == null ? null : peer.known(d.regionId(), d.key());
      if (info == null) {
        return false;
      }
      place(i, peer, info);
    }
    start();
    return true;
  }

  /** Resolves every descriptor, over the side channel where needed (blocking), then starts the gets. */
  void run() throws IOException {
    for (int i = 0; i < remote.size(); i++) {
      MemoryDescriptor d = remote.get(i);
      UcxPeer peer = agent.peer(d.agentAddress());
      place(i, peer, peer.region(d.regionId(), d.key()));
    }
    start();
  }

  private void place(int i, UcxPeer peer, UcxPeer.RegionInfo info) {
    MemoryDescriptor d = remote.get(i);
    if (d.offset() + d.length() > info.length()) {
      throw new IllegalArgumentException(
          "range [" + d.offset() + ", " + (d.offset() + d.length()) + ") is outside region " + d.regionId()
              + " of " + info.length() + " bytes");
    }
    remoteAddress[i] = info.base() + d.offset();
    keys[i] = info.key();
    owners[i] = peer;
    if (peer.needsOwnersWorker(info)) {
      toPoke.add(peer);
    }
  }

  private void start() throws IOException {
    result.whenComplete((v, e) -> usedPeers.forEach(p -> p.active.remove(this)));
    for (int i = 0; i < remote.size(); i++) {
      UcxPeer peer = owners[i];
      if (!usedPeers.contains(peer)) {
        usedPeers.add(peer);
        peer.active.add(this); // from now on, the peer going fails this read
        if (peer.isGone()) {
          throw new IOException("the peer " + remote.get(i).agentAddress() + " went away before the transfer");
        }
      }
    }
    for (UcxPeer peer : toPoke) {
      peer.poke();
    }
    // Destinations are not registered: UCX registers (and caches) what its protocol needs.
    ucx.execute(() -> {
      if (failure != null) {
        settle(); // timed out while resolving
        return;
      }
      for (int k = 0; k < Math.min(WINDOW, remote.size()); k++) {
        issueNext();
      }
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
              finish();
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
  void giveUp(UcxPeer peer, String why) {
    int before = inFlight.size();
    inFlight.removeIf(g -> peer == null || owners[g.index] == peer);
    int gone = before - inFlight.size();
    if (gone > 0) {
      ucx.inFlight.addAndGet(-gone);
      agent.lostGet(gone);
      log.warn("UCX read gave up on {} gets that never ended ({})", gone, why);
    }
    fail(new IOException(why));
  }

  /**
   * Every get ended well: the bytes are the owner's. A get that completed copied them from memory
   * the owner still held — over shared memory from a mapping of it, which outlives the owner;
   * through the owner's worker or across nodes, a get to an owner that went away never completes
   * — so the owner is not asked again whether it is still there (which cost a round trip per read).
   * A read that finds its owner already known gone fails all the same. On the worker thread (no
   * hand-off: the caller's wake-up is the only one), so dependents attached without an
   * {@code *Async} method run here: see {@link dev.tandem.transfer.TransferAgent#read}.
   */
  private void finish() {
    for (UcxPeer p : usedPeers) {
      if (p.isGone()) {
        result.completeExceptionally(new IOException("the peer went away during the transfer"));
        return;
      }
    }
    result.complete(null);
  }
}
