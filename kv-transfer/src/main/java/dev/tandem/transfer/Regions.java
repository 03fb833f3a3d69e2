package dev.tandem.transfer;

import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An agent's registered memory: region id → segment, with bounds checks. Shared by the backends.
 * Thread-safe.
 */
public final class Regions {
  private record Region(MemorySegment segment, long key) {}

  private static final SecureRandom KEYS = new SecureRandom();

  private final Map<Long, Region> regions = new ConcurrentHashMap<>();
  private final AtomicLong nextId = new AtomicLong(1);

  /** Registers {@code segment} under a fresh id and a random key (see {@link MemoryDescriptor}). */
  public MemoryDescriptor add(String address, MemorySegment segment) {
    long id = nextId.getAndIncrement();
    long key = KEYS.nextLong();
    regions.put(id, new Region(segment, key));
    return new MemoryDescriptor(address, id, key, 0, segment.byteSize());
  }

  public void remove(MemoryDescriptor d) {
    regions.remove(d.regionId());
  }

  /**
   * Whether {@code key} is the key of region {@code regionId} (false for an unknown region).
   * Takes the same time whichever bits differ.
   */
  public boolean matches(long regionId, long key) {
    Region r = regions.get(regionId);
    return r != null && (r.key ^ key) == 0;
  }

  /**
   * The bytes a descriptor names.
   *
   * @throws IllegalArgumentException if the region is unknown, the key is not its key, or the
   *     range is outside it; an unknown region and a wrong key read the same, so that a peer
   *     learns nothing from guessing
   */
  public MemorySegment resolve(long regionId, long key, long offset, long length) {
    Region r = regions.get(regionId);
    if (r == null || (r.key ^ key) != 0) {
      throw new IllegalArgumentException("region " + regionId + " is not registered here, or the key is not its key");
    }
    MemorySegment s = r.segment;
    // Written so that no sum overflows: a peer's offset and length are any 64-bit values.
    if (offset < 0 || length < 0 || offset > s.byteSize() || length > s.byteSize() - offset) {
      throw new IllegalArgumentException(
          "range of " + length + " bytes at " + offset + " is outside region " + regionId + " of " + s.byteSize() + " bytes");
    }
    return s.asSlice(offset, length);
  }

  /**
   * Checks that a backend can hand {@code segment} to native code.
   *
   * @throws IllegalArgumentException naming the backend when the segment is on the heap
   */
  public static void requireNative(MemorySegment segment, String backend) {
    if (!segment.isNative()) {
      throw new IllegalArgumentException(
          "the " + backend + " backend works on off-heap (native) memory; register or read into an off-heap segment");
    }
  }

  /** Checks that a read's two lists pair up. */
  public static void checkPairs(List<MemoryDescriptor> remote, List<MemorySegment> local) {
    if (remote.size() != local.size()) {
      throw new IllegalArgumentException(remote.size() + " remote descriptors but " + local.size() + " local segments");
    }
    for (int i = 0; i < remote.size(); i++) {
      if (remote.get(i).length() != local.get(i).byteSize()) {
        throw new IllegalArgumentException(
            "descriptor " + i + " has " + remote.get(i).length() + " bytes, its local segment " + local.get(i).byteSize());
      }
    }
  }
}
