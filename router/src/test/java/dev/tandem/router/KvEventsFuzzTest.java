package dev.tandem.router;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.tandem.common.KvEvent;
import dev.tandem.common.WorkerId;
import dev.tandem.proto.worker.v1.KvEventBatch;
import dev.tandem.router.index.BlockHashIndex;
import dev.tandem.router.index.Overlap;
import dev.tandem.wire.FromWire;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Fuzz target for what a worker (or anything posing as one) sends a router's KV index: a
 * {@code KvEventBatch} as bytes off the wire, decoded, ordered and applied as a subscription does.
 * A batch either fails to parse, is refused whole ({@link IllegalArgumentException}: an event
 * without a kind), or is applied; the index stays consistent (no negative counts, lookups work)
 * whatever the hashes, ids, parents and tiers. Committed inputs run with every test run; {@code
 * .ci/fuzz} fuzzes it for a bounded time.
 */
class KvEventsFuzzTest {
  private static final WorkerId W = new WorkerId("w");

  @FuzzTest(maxDuration = "30s")
  void kvEventBatches(byte[] bytes) {
    BlockHashIndex index = new BlockHashIndex();
    KvEventSequencer sequencer = new KvEventSequencer();
    List<Long> seen = new ArrayList<>();
    // The input as up to four length-prefixed batches of one stream.
    int at = 0;
    for (int b = 0; b < 4 && at < bytes.length; b++) {
      int len = Math.min(bytes[at] & 0xff, bytes.length - at - 1);
      byte[] one = java.util.Arrays.copyOfRange(bytes, at + 1, at + 1 + len);
      at += 1 + len;
      KvEventBatch batch;
      try {
        batch = KvEventBatch.parseFrom(one);
      } catch (InvalidProtocolBufferException e) {
        continue;
      }
      List<KvEvent> events = new ArrayList<>();
      try {
        for (var e : batch.getEventsList()) {
          events.add(FromWire.kvEvent(e));
        }
      } catch (IllegalArgumentException refused) {
        continue;
      }
      KvEventSequencer.Decision d = sequencer.accept(events, batch.getSnapshot());
      if (d.reset()) {
        index.removeWorker(W);
      }
      for (KvEvent e : d.apply()) {
        index.apply(W, e);
        if (e instanceof KvEvent.Stored s) {
          s.blocks().forEach(x -> seen.add(x.sequenceHash()));
        }
      }
    }
    assertTrue(index.blockCount() >= 0 && index.blockCount(W) >= 0);
    assertTrue(index.blockCount(W) <= index.blockCount(), "a worker holds no more than the index does");
    long[] lookup = seen.stream().mapToLong(Long::longValue).toArray();
    Map<WorkerId, Overlap> overlaps = index.overlaps(lookup);
    for (Overlap o : overlaps.values()) {
      assertTrue(o.blocks() >= 1 && o.blocks() <= lookup.length, o.toString());
    }
  }
}
