package dev.tandem.common.wire;

import dev.tandem.common.KvEvent;
import dev.tandem.common.StorageTier;
import dev.tandem.proto.worker.v1.AllCleared;
import dev.tandem.proto.worker.v1.BlocksRemoved;
import dev.tandem.proto.worker.v1.BlocksStored;
import dev.tandem.proto.worker.v1.StoredBlock;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/** Maps {@link KvEvent}s to and from their protobuf form. Stateless. */
public final class KvEventWire {
  private KvEventWire() {}

  public static dev.tandem.proto.worker.v1.KvEvent toProto(KvEvent event) {
    var b = dev.tandem.proto.worker.v1.KvEvent.newBuilder().setEventId(event.eventId());
    switch (event) {
      case KvEvent.Stored s -> {
        var stored = BlocksStored.newBuilder().setTier(toProto(s.tier()));
        s.parentHash().ifPresent(stored::setParentHash);
        for (KvEvent.StoredBlock block : s.blocks()) {
          stored.addBlocks(
              StoredBlock.newBuilder()
                  .setSequenceHash(block.sequenceHash())
                  .setLocalHash(block.localHash()));
        }
        b.setStored(stored);
      }
      case KvEvent.Removed r -> {
        var removed = BlocksRemoved.newBuilder().setTier(toProto(r.tier()));
        for (long h : r.sequenceHashes()) {
          removed.addSequenceHashes(h);
        }
        b.setRemoved(removed);
      }
      case KvEvent.Cleared c -> b.setCleared(AllCleared.getDefaultInstance());
    }
    return b.build();
  }

  public static KvEvent fromProto(dev.tandem.proto.worker.v1.KvEvent event) {
    long id = event.getEventId();
    return switch (event.getKindCase()) {
      case STORED -> {
        BlocksStored s = event.getStored();
        List<KvEvent.StoredBlock> blocks = new ArrayList<>(s.getBlocksCount());
        for (StoredBlock block : s.getBlocksList()) {
          blocks.add(new KvEvent.StoredBlock(block.getSequenceHash(), block.getLocalHash()));
        }
        OptionalLong parent =
            s.hasParentHash() ? OptionalLong.of(s.getParentHash()) : OptionalLong.empty();
        yield new KvEvent.Stored(id, parent, blocks, fromProto(s.getTier()));
      }
      case REMOVED -> {
        BlocksRemoved r = event.getRemoved();
        long[] hashes = new long[r.getSequenceHashesCount()];
        for (int i = 0; i < hashes.length; i++) {
          hashes[i] = r.getSequenceHashes(i);
        }
        yield new KvEvent.Removed(id, hashes, fromProto(r.getTier()));
      }
      case CLEARED -> new KvEvent.Cleared(id);
      case KIND_NOT_SET -> throw new IllegalArgumentException("KV event " + id + " has no kind");
    };
  }

  static dev.tandem.proto.worker.v1.StorageTier toProto(StorageTier tier) {
    return switch (tier) {
      case DEVICE -> dev.tandem.proto.worker.v1.StorageTier.STORAGE_TIER_DEVICE;
      case HOST -> dev.tandem.proto.worker.v1.StorageTier.STORAGE_TIER_HOST;
      case DISK -> dev.tandem.proto.worker.v1.StorageTier.STORAGE_TIER_DISK;
    };
  }

  static StorageTier fromProto(dev.tandem.proto.worker.v1.StorageTier tier) {
    return switch (tier) {
      case STORAGE_TIER_HOST -> StorageTier.HOST;
      case STORAGE_TIER_DISK -> StorageTier.DISK;
      default -> StorageTier.DEVICE;
    };
  }
}
