package dev.tandem.transfer.cudaipc;

import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.Regions;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The owner's half of {@code cuda-ipc}: its registered regions (each in one device allocation,
 * exported once) and the socket readers ask over ({@link CudaIpcWire}). One virtual thread per
 * reader connection; closing stops the socket and drops every connection, which fails the reads
 * in flight at their confirmation.
 *
 * <p>Thread-safe.
 */
final class CudaIpcOwner implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(CudaIpcOwner.class);

  private record Exported(long id, DeviceMemory.Allocation allocation) {}

  private final DeviceMemory device;
  private final Regions regions = new Regions();
  private final Map<Long, Exported> byBase = new ConcurrentHashMap<>();
  private final Map<Long, Exported> regionAllocation = new ConcurrentHashMap<>();
  private final AtomicLong nextAllocation = new AtomicLong(1);
  private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
  private final Path directory;
  private final ServerSocketChannel server;
  private final CudaIpcWire.Address address;
  private volatile boolean closed;

  CudaIpcOwner(DeviceMemory device) {
    this.device = device;
    try {
      // A directory only this user can enter: the socket is the way to this process's GPU memory.
      directory = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "tandem-cuda-ipc-",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Path socket = directory.resolve("agent.sock");
      server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      server.bind(UnixDomainSocketAddress.of(socket));
      address = new CudaIpcWire.Address(CudaIpcWire.NODE, socket);
    } catch (IOException e) {
      throw new IllegalStateException("cuda-ipc: cannot open its socket under " + System.getProperty("java.io.tmpdir") + ": " + e.getMessage(), e);
    }
    Thread.ofPlatform().daemon().name("tandem-cuda-ipc-accept").start(this::accept);
  }

  String address() {
    return address.toString();
  }

  /** Registers device memory {@code segment} names: finds its allocation, exported the first time. */
  MemoryDescriptor register(MemorySegment segment) {
    DeviceMemory.Allocation a = device.allocationOf(segment.address(), segment.byteSize());
    // The driver hands a freed allocation's addresses out again: a different handle at a known base
    // is a new allocation, under a new id, so that readers map it instead of reusing the old mapping.
    Exported e = byBase.compute(a.base(), (b, known) -> known != null && known.allocation().size() == a.size()
        && Arrays.equals(known.allocation().handle(), a.handle()) ? known : new Exported(nextAllocation.getAndIncrement(), a));
    MemoryDescriptor d = regions.add(address(), segment);
    regionAllocation.put(d.regionId(), e);
    return d;
  }

  void deregister(MemoryDescriptor d) {
    regions.remove(d);
    regionAllocation.remove(d.regionId());
  }

  private void accept() {
    while (!closed) {
      try {
        SocketChannel c = server.accept();
        connections.add(c);
        if (closed) {
          c.close();
          return;
        }
        Thread.ofVirtual().name("tandem-cuda-ipc-serve").start(() -> serve(c));
      } catch (IOException e) {
        if (!closed) {
          log.warn("cuda-ipc: accepting on {} failed: {}", address, e.toString());
        }
        return;
      }
    }
  }

  private void serve(SocketChannel c) {
    Set<Long> sent = new HashSet<>(); // allocations whose handle this connection has had
    try (c;
        DataInputStream in = new DataInputStream(new BufferedInputStream(Channels.newInputStream(c)));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Channels.newOutputStream(c)))) {
      while (!closed) {
        int op = in.read();
        if (op < 0) {
          return;
        }
        int n = in.readInt();
        if (n < 0 || n > CudaIpcWire.MAX_DESCRIPTORS) {
          throw new IOException("a request for " + n + " descriptors");
        }
        switch (op) {
          case CudaIpcWire.OP_READ -> answerRead(in, out, n, sent);
          case CudaIpcWire.OP_CONFIRM -> answerConfirm(in, out, n);
          default -> throw new IOException("unknown request " + op);
        }
        out.flush();
      }
    } catch (EOFException e) {
      // the reader went away
    } catch (IOException e) {
      if (!closed) {
        log.debug("cuda-ipc: a reader's connection ended: {}", e.toString());
      }
    } finally {
      connections.remove(c);
    }
  }

  private void answerRead(DataInputStream in, DataOutputStream out, int n, Set<Long> sent) throws IOException {
    long[] allocation = new long[n];
    long[] offset = new long[n];
    Map<Long, Exported> fresh = new java.util.LinkedHashMap<>();
    String problem = null;
    for (int i = 0; i < n; i++) {
      long region = in.readLong(), key = in.readLong(), off = in.readLong(), length = in.readLong();
      if (problem != null) {
        continue; // read the rest of the request, answer the first problem
      }
      try {
        MemorySegment bytes = regions.resolve(region, key, off, length);
        Exported e = regionAllocation.get(region);
        if (e == null) {
          throw new IllegalArgumentException("region " + region + " is not registered here");
        }
        allocation[i] = e.id();
        offset[i] = bytes.address() - e.allocation().base();
        if (!sent.contains(e.id())) {
          fresh.put(e.id(), e);
        }
      } catch (IllegalArgumentException e) {
        problem = e.getMessage();
      }
    }
    if (problem != null) {
      out.writeByte(CudaIpcWire.ERROR);
      out.writeUTF(problem);
      return;
    }
    out.writeByte(CudaIpcWire.OK);
    out.writeLong(device.processId());
    for (int i = 0; i < n; i++) {
      out.writeLong(allocation[i]);
      out.writeLong(offset[i]);
    }
    out.writeInt(fresh.size());
    for (Exported e : fresh.values()) {
      out.writeLong(e.id());
      out.writeLong(e.allocation().base());
      out.writeLong(e.allocation().size());
      out.writeInt(e.allocation().handle().length);
      out.write(e.allocation().handle());
      sent.add(e.id());
    }
  }

  private void answerConfirm(DataInputStream in, DataOutputStream out, int n) throws IOException {
    String problem = null;
    for (int i = 0; i < n; i++) {
      long region = in.readLong(), key = in.readLong();
      if (problem == null && !regions.matches(region, key)) {
        problem = "region " + region + " was deregistered during the read: its bytes may be stale";
      }
    }
    if (problem != null) {
      out.writeByte(CudaIpcWire.ERROR);
      out.writeUTF(problem);
    } else {
      out.writeByte(CudaIpcWire.OK);
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException e) {
      log.debug("cuda-ipc: closing the socket: {}", e.toString());
    }
    for (SocketChannel c : connections) {
      try {
        c.close();
      } catch (IOException e) {
        log.debug("cuda-ipc: closing a connection: {}", e.toString());
      }
    }
    try {
      Files.deleteIfExists(address.socket());
      Files.deleteIfExists(directory);
    } catch (IOException e) {
      log.debug("cuda-ipc: removing {}: {}", directory, e.toString());
    }
  }
}
