package dev.tandem.transfer.ucx;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import dev.tandem.transfer.TransferTls;
import javax.net.ssl.SSLSocket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.openucx.jucx.ucp.UcpMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner's side of the side channel ({@link UcxSideChannel}): answers readers' hellos, region
 * lookups, pings and pokes, and holds their watch connections to announce deregistered regions.
 *
 * <p>Thread-safe: one virtual thread per connection.
 */
final class UcxSideChannelServer {
  private static final Logger log = LoggerFactory.getLogger(UcxSideChannelServer.class);

  private final UcxTransferAgent agent;
  private final UcxWorkerThread ucx;
  private final ServerSocket sideChannel;
  private final Set<Socket> accepted = ConcurrentHashMap.newKeySet();
  private final Set<Watcher> watchers = ConcurrentHashMap.newKeySet();
  /** Requests read from readers so far (hellos, region lookups, pings, pokes, watches). */
  private final java.util.concurrent.atomic.AtomicLong requests = new java.util.concurrent.atomic.AtomicLong();

  UcxSideChannelServer(UcxTransferAgent agent, ServerSocket sideChannel) {
    this.agent = agent;
    this.ucx = agent.ucx();
    this.sideChannel = sideChannel;
  }

  /** Tells every reader to forget {@code regionId}, each acknowledging before this returns (bounded). */
  void invalidate(long regionId) {
    for (Watcher w : watchers) {
      w.invalidate(regionId);
    }
  }

  long requests() {
    return requests.get();
  }

  /** Closes the listening socket and every connection. */
  void close() {
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
  }

  /** A reader's watch connection, as the owner holds it. */
  static final class Watcher {
    private final DataOutputStream out;
    final Semaphore acks = new Semaphore(0);

    Watcher(DataOutputStream out) {
      this.out = out;
    }

    /** Tells the reader to forget a region and waits (briefly) for it to have done so. */
    synchronized void invalidate(long regionId) {
      try {
        out.writeByte(UcxSideChannel.OP_INVALIDATE);
        out.writeLong(regionId);
        out.flush();
        if (!acks.tryAcquire(UcxSideChannel.TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
          log.warn("a UCX reader did not acknowledge that region {} is gone within {} ms", regionId, UcxSideChannel.TIMEOUT_MS);
        }
      } catch (IOException e) {
        // the reader is gone: nothing to forget
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Accepts readers until the agent closes. */
  void acceptLoop() {
    while (!agent.isClosed()) {
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
      if (s instanceof SSLSocket secured) {
        // A peer that cannot prove it belongs to the deployment is dropped here.
        secured.setSoTimeout((int) TransferTls.HANDSHAKE_TIMEOUT.toMillis());
        secured.startHandshake();
        secured.setSoTimeout(0);
      }
      DataInputStream in = new DataInputStream(s.getInputStream());
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      while (!agent.isClosed()) {
        int op = in.readByte();
        requests.incrementAndGet();
        switch (op) {
          case UcxSideChannel.OP_HELLO -> {
            String readerNode = in.readUTF();
            if (agent.sharedMemoryPath() && readerNode.equals(UcxSideChannel.NODE)) {
              agent.usedSharedMemory(); // the reader's endpoint to us has no peer-error handling
              out.writeUTF(UcxSideChannel.NODE);
            } else {
              out.writeUTF("");
            }
            ByteBuffer a = ucx.call(() -> ucx.worker().getAddress());
            byte[] bytes = new byte[a.remaining()];
            a.get(bytes);
            out.writeInt(bytes.length);
            out.write(bytes);
          }
          case UcxSideChannel.OP_REGION -> {
            long id = in.readLong();
            long regionKey = in.readLong();
            UcpMemory m = agent.mapped(id, regionKey);
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
              out.writeBoolean(agent.allocated(id));
            }
          }
          case UcxSideChannel.OP_PING -> out.writeByte(UcxSideChannel.OP_PING);
          case UcxSideChannel.OP_POKE -> ucx.poke();
          case UcxSideChannel.OP_WATCH -> {
            // Held open until this agent or the reader closes; carries invalidations and their acks.
            Watcher w = new Watcher(out);
            watchers.add(w);
            try {
              while (!agent.isClosed() && in.read() == UcxSideChannel.OP_INVALIDATE) {
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
}
