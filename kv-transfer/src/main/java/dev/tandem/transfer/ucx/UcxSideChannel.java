package dev.tandem.transfer.ucx;

import dev.tandem.transfer.TransferTls;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * The UCX agent's side channel, a TCP protocol next to UCX (under mutual TLS when the deployment has
 * certificates): a reader says hello (its node,
 * answered with the owner's node and UCP worker address), asks for regions (base, length, packed
 * remote key, and whether the owner's agent allocated it; by id and region key, refused without the
 * key), pings (a liveness check), pokes the owner's worker before reading memory it serves, and holds a second "watch" connection on which the owner announces deregistered regions (each acknowledged)
 * and which ends when the owner does. Also this process's node identity: equal strings can share
 * memory.
 */
final class UcxSideChannel {
  static final int OP_HELLO = 1;
  static final int OP_REGION = 2;
  static final int OP_PING = 3;
  static final int OP_WATCH = 4;
  static final int OP_INVALIDATE = 5;
  /** A reader is about to read: the owner's worker should poll (no answer). */
  static final int OP_POKE = 6;
  static final int TIMEOUT_MS = 10_000;
  /**
   * This process's node as shared memory sees it (kernel boot, IPC and PID namespaces), and its
   * network namespace: processes in different network namespaces are treated as different hosts,
   * whose KV crosses the network between them (as two pods' or two test hosts' does).
   */
  static final String NODE = nodeKey();

  private UcxSideChannel() {}

  private static String nodeKey() {
    try {
      return Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim()
          + "/" + Files.readSymbolicLink(Path.of("/proc/self/ns/ipc"))
          + "/" + Files.readSymbolicLink(Path.of("/proc/self/ns/pid"))
          + "/" + Files.readSymbolicLink(Path.of("/proc/self/ns/net"));
    } catch (IOException | RuntimeException e) {
      return "unknown-" + UUID.randomUUID(); // never equal: no shared memory
    }
  }

  /** A connection to an owner's side channel; with {@code tls} (may be null), after a mutual TLS handshake. */
  static Socket connect(String host, int port, TransferTls tls) throws IOException {
    Socket s = new Socket();
    try {
      s.connect(new InetSocketAddress(host, port), TIMEOUT_MS);
      s.setTcpNoDelay(true);
      if (tls == null) {
        return s;
      }
      s.setSoTimeout((int) TransferTls.HANDSHAKE_TIMEOUT.toMillis());
      Socket secured = tls.clientSocket(s);
      secured.setSoTimeout(0);
      return secured;
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
  }
}
