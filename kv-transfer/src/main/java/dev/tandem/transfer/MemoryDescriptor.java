package dev.tandem.transfer;

/**
 * A span of memory an agent registered for remote reads: which agent (its address), which region,
 * the region's key, and the byte range within it. Plain values, so it serializes into any wire
 * message.
 *
 * <p>The key is the capability: a random 64-bit secret drawn when the region was registered,
 * which the agent checks on every read. Only a peer that was handed the descriptor (by the worker
 * that owns the region, over its authenticated gRPC API) can read the region; region ids alone
 * are sequential and guessable.
 */
public record MemoryDescriptor(String agentAddress, long regionId, long key, long offset, long length) {
  public MemoryDescriptor {
    if (offset < 0 || length < 0) {
      throw new IllegalArgumentException("offset and length must be >= 0: " + offset + ", " + length);
    }
  }

  /** A sub-range of this descriptor. */
  public MemoryDescriptor slice(long offset, long length) {
    if (offset < 0 || length < 0 || offset + length > this.length) {
      throw new IndexOutOfBoundsException(
          "slice [" + offset + ", " + (offset + length) + ") outside a descriptor of " + this.length + " bytes");
    }
    return new MemoryDescriptor(agentAddress, regionId, key, this.offset + offset, length);
  }
}
