package dev.tandem.transfer;

/**
 * A span of memory an agent registered for remote reads: which agent (its address), which region,
 * and the byte range within it. Plain values, so it serializes into any wire message.
 */
public record MemoryDescriptor(String agentAddress, long regionId, long offset, long length) {
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
    return new MemoryDescriptor(agentAddress, regionId, this.offset + offset, length);
  }
}
