package dev.tandem.transfer.cudaipc;

import dev.tandem.transfer.MemoryDescriptor;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A reader's connection to one owner: the side channel, and the owner's allocations mapped into
 * this process (opened once, closed with the peer). Used by the reading agent's copy thread only.
 */
final class CudaIpcPeer implements AutoCloseable {
  private final String address;
  private final DeviceMemory device;
  private final SocketChannel channel;
  private final DataInputStream in;
  private final DataOutputStream out;
  private final Map<Long, Long> mapped = new HashMap<>(); // the owner's allocation id -> its base here
  private final Map<Long, Long> opened = new HashMap<>(); // the subset this peer opened (to close)

  /** Where each descriptor of a read lies in this process: the source address of its copy. */
  record Sources(long[] addresses) {}

  /** An owner's handle this process could not open: the read fails, and the peer must be dropped. */
  static final class MappingFailedException extends IllegalStateException {
    MappingFailedException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private CudaIpcPeer(String address, DeviceMemory device, SocketChannel channel) {
    this.address = address;
    this.device = device;
    this.channel = channel;
    this.in = new DataInputStream(new BufferedInputStream(Channels.newInputStream(channel)));
    this.out = new DataOutputStream(new BufferedOutputStream(Channels.newOutputStream(channel)));
  }

  /**
   * Connects to the owner at {@code address}.
   *
   * @throws IOException when the owner is on another node or cannot be reached
   */
  static CudaIpcPeer connect(String address, DeviceMemory device) throws IOException {
    CudaIpcWire.Address a;
    try {
      a = CudaIpcWire.Address.parse(address);
    } catch (IllegalArgumentException e) {
      throw new IOException(e.getMessage());
    }
    if (!a.node().equals(CudaIpcWire.NODE)) {
      throw new IOException("cuda-ipc owner " + address + " is on another node (or another IPC namespace): cuda-ipc maps GPU"
          + " memory between processes of one node only; use tcp or ucx between nodes");
    }
    SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX);
    try {
      c.connect(UnixDomainSocketAddress.of(a.socket()));
    } catch (IOException e) {
      c.close();
      throw new IOException("cuda-ipc owner " + address + " cannot be reached: " + e.getMessage(), e);
    }
    return new CudaIpcPeer(address, device, c);
  }

  /**
   * Asks the owner for {@code remote}'s places, mapping allocations not mapped yet.
   *
   * @throws IllegalArgumentException the owner's refusal (unknown region, wrong key, range outside)
   * @throws IOException the owner went away
   */
  Sources locate(List<MemoryDescriptor> remote) throws IOException {
    out.writeByte(CudaIpcWire.OP_READ);
    out.writeInt(remote.size());
    for (MemoryDescriptor d : remote) {
      out.writeLong(d.regionId());
      out.writeLong(d.key());
      out.writeLong(d.offset());
      out.writeLong(d.length());
    }
    out.flush();
    refusal();
    long ownerPid = in.readLong();
    long[] allocation = new long[remote.size()];
    long[] offset = new long[remote.size()];
    for (int i = 0; i < remote.size(); i++) {
      allocation[i] = in.readLong();
      offset[i] = in.readLong();
    }
    int fresh = in.readInt();
    if (fresh < 0 || fresh > remote.size()) {
      throw new IOException("cuda-ipc owner " + address + " sent " + fresh + " handles for " + remote.size() + " descriptors");
    }
    long[] ids = new long[fresh];
    long[] bases = new long[fresh];
    byte[][] handles = new byte[fresh][];
    for (int j = 0; j < fresh; j++) { // the whole answer first: the connection stays in step whatever mapping does
      ids[j] = in.readLong();
      bases[j] = in.readLong();
      in.readLong(); // the allocation's size
      int length = in.readInt();
      if (length < 0 || length > CudaIpcWire.MAX_HANDLE_BYTES) {
        throw new IOException("cuda-ipc owner " + address + " sent a handle of " + length + " bytes");
      }
      handles[j] = in.readNBytes(length);
    }
    for (int j = 0; j < fresh; j++) {
      if (mapped.containsKey(ids[j])) {
        continue;
      }
      if (ownerPid == device.processId()) {
        mapped.put(ids[j], bases[j]); // this process's own memory: its addresses as they are
        continue;
      }
      long here;
      try {
        here = device.open(handles[j]);
      } catch (RuntimeException e) {
        // The owner counts this handle as sent on this connection: the reader drops the peer, and
        // the next read connects again and is sent it again.
        throw new MappingFailedException("cuda-ipc: mapping allocation " + ids[j] + " of owner " + address + " failed: "
            + e.getMessage(), e);
      }
      mapped.put(ids[j], here);
      opened.put(ids[j], here);
    }
    long[] sources = new long[remote.size()];
    for (int i = 0; i < remote.size(); i++) {
      Long base = mapped.get(allocation[i]);
      if (base == null) {
        throw new IOException("cuda-ipc owner " + address + " named allocation " + allocation[i] + " without its handle");
      }
      sources[i] = base + offset[i];
    }
    return new Sources(sources);
  }

  /**
   * Asks the owner whether every region of {@code remote} is still registered, after the copies.
   *
   * @throws IllegalArgumentException a region was deregistered meanwhile
   * @throws IOException the owner went away
   */
  void confirm(List<MemoryDescriptor> remote) throws IOException {
    out.writeByte(CudaIpcWire.OP_CONFIRM);
    out.writeInt(remote.size());
    for (MemoryDescriptor d : remote) {
      out.writeLong(d.regionId());
      out.writeLong(d.key());
    }
    out.flush();
    refusal();
  }

  private void refusal() throws IOException {
    int status = in.readUnsignedByte();
    if (status == CudaIpcWire.ERROR) {
      throw new IllegalArgumentException("cuda-ipc owner " + address + " refused: " + in.readUTF());
    }
    if (status != CudaIpcWire.OK) {
      throw new IOException("cuda-ipc owner " + address + " answered " + status);
    }
  }

  /** Ends the connection now; a copy thread blocked on it fails (the read's watchdog calls this). */
  void disconnect() {
    try {
      channel.close();
    } catch (IOException e) {
      // closing anyway
    }
  }

  /** Unmaps what this peer mapped and ends the connection. */
  @Override
  public void close() {
    disconnect();
    for (long base : opened.values()) {
      try {
        device.close(base);
      } catch (RuntimeException e) {
        // the owner's memory goes with the process that owns it
      }
    }
    opened.clear();
    mapped.clear();
  }
}
