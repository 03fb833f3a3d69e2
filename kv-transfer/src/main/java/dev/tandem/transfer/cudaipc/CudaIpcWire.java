package dev.tandem.transfer.cudaipc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * The side channel of {@code cuda-ipc}, over a Unix domain socket (so on one node only, and only
 * for processes that can open the socket's file): a reader names the regions of a read with their
 * keys and ranges; the owner checks them and answers where each lies in which allocation, with
 * the IPC handle of each allocation this connection has not had yet. After its copies the reader
 * asks the owner to confirm that every region is still registered: a region deregistered (or an
 * owner gone) in between fails the read, as its bytes may be stale.
 *
 * <p>Frames (Java data streams): {@code READ n (region key offset length)×n} → {@code OK
 * (allocation offset)×n m (allocation base size handle)×m} or {@code ERROR message}; {@code
 * CONFIRM n (region key)×n} → {@code OK} or {@code ERROR message}.
 */
final class CudaIpcWire {
  static final int OP_READ = 1;
  static final int OP_CONFIRM = 2;
  static final int OK = 0;
  static final int ERROR = 1;
  /** Most descriptors one request names (a KV pull names two a run of blocks, per layer). */
  static final int MAX_DESCRIPTORS = 1 << 20;
  /** Most bytes an IPC handle takes (CUDA's are 64). */
  static final int MAX_HANDLE_BYTES = 1024;
  private static final String PREFIX = "cuda-ipc:";

  private CudaIpcWire() {}

  /**
   * This node as CUDA IPC sees it (the kernel's boot and its IPC namespace), as a name without
   * colons: processes with different names cannot map each other's GPU memory.
   */
  static final String NODE = nodeName();

  private static String nodeName() {
    try {
      String node = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim()
          + "/" + Files.readSymbolicLink(Path.of("/proc/self/ns/ipc"));
      return UUID.nameUUIDFromBytes(node.getBytes(StandardCharsets.UTF_8)).toString();
    } catch (IOException | RuntimeException e) {
      return "unknown-" + UUID.randomUUID(); // never equal
    }
  }

  /** An owner's address: its node and the path of its socket. */
  record Address(String node, Path socket) {
    @Override
    public String toString() {
      return PREFIX + node + ":" + socket;
    }

    /**
     * @throws IllegalArgumentException naming the address when it is not a cuda-ipc one
     */
    static Address parse(String address) {
      int colon = address.startsWith(PREFIX) ? address.indexOf(':', PREFIX.length()) : -1;
      if (colon < 0) {
        throw new IllegalArgumentException("'" + address + "' is not a cuda-ipc agent address (cuda-ipc:<node>:<socket path>)");
      }
      return new Address(address.substring(PREFIX.length(), colon), Path.of(address.substring(colon + 1)));
    }
  }
}
