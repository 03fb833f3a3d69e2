package dev.tandem.transfer.tcp;

/**
 * The TCP backend's frames, big-endian. A read request: {@code [int READ][long requestId][long
 * regionId][long key][long offset][long length]} (the key: see {@link
 * dev.tandem.transfer.MemoryDescriptor}). A response: {@code [int DATA|ERROR][long requestId][long
 * length]} followed by {@code length} bytes (the data, or a UTF-8 error message).
 */
final class TcpWire {
  static final int READ = 0x544B5652; // "TKVR"
  static final int DATA = 1;
  static final int ERROR = 2;
  static final int REQUEST_BYTES = 4 + 8 * 5;
  static final int RESPONSE_HEADER_BYTES = 4 + 8 + 8;
  /** Largest slice handed to Netty at once (a ByteBuffer view is limited to 2 GiB). */
  static final long MAX_CHUNK = 1L << 30;

  private TcpWire() {}
}
