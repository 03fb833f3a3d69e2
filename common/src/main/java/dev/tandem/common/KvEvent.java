package dev.tandem.common;

import java.util.List;
import java.util.OptionalLong;

/**
 * One change to a worker's KV cache, as the router's index consumes it. {@code eventId} is
 * monotonic per worker, starting at 1.
 */
public sealed interface KvEvent {
  long eventId();

  /** A full block whose KV was computed and is now cached. */
  record StoredBlock(long sequenceHash, long localHash) {}

  /** Blocks stored in order; the first block's parent is {@code parentHash} (empty at the root). */
  record Stored(long eventId, OptionalLong parentHash, List<StoredBlock> blocks, StorageTier tier)
      implements KvEvent {
    public Stored {
      blocks = List.copyOf(blocks);
    }
  }

  /** Blocks evicted from the cache. */
  record Removed(long eventId, long[] sequenceHashes, StorageTier tier) implements KvEvent {}

  /** Everything this worker cached is gone (restart, reset). */
  record Cleared(long eventId) implements KvEvent {}
}
