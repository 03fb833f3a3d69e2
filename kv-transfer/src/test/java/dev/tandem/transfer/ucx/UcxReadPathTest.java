package dev.tandem.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.transfer.MemoryDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What a read costs its owner once the reader knows the peer and the region: nothing over the side
 * channel for memory the owner's agent allocated (the reader copies it over shared memory), one
 * poke for registered process memory (the owner's worker serves it). Needs libucx0; the surefire
 * environment sets UCX_NET_DEVICES=lo.
 */
class UcxReadPathTest {
  private static void read(UcxTransferAgent reader, MemoryDescriptor d, MemorySegment into) throws Exception {
    reader.read(List.of(d), List.of(into), Duration.ofSeconds(10), null).get(10, TimeUnit.SECONDS);
  }

  /**
   * The owner's request count once it stops moving: a poke is sent without an answer, so the owner
   * may serve a read's gets before its side-channel thread has counted the poke.
   */
  private static long settled(UcxTransferAgent owner) throws InterruptedException {
    long seen = owner.sideChannelRequests();
    for (int quiet = 0, i = 0; quiet < 10 && i < 1_000; i++) {
      Thread.sleep(5);
      long now = owner.sideChannelRequests();
      quiet = now == seen ? quiet + 1 : 0;
      seen = now;
    }
    return seen;
  }

  @Test
  void aKnownRegionIsReadWithoutAskingItsOwnerAndRegisteredMemoryWithOnePoke() throws Exception {
    UcxBackendProvider provider = new UcxBackendProvider();
    assumeTrue(provider.isAvailable(), provider.unavailableReason());
    try (Arena arena = Arena.ofShared();
        UcxTransferAgent owner = new UcxTransferAgent("127.0.0.1");
        UcxTransferAgent reader = new UcxTransferAgent("127.0.0.1")) {
      var allocated = owner.allocate(1 << 20);
      allocated.segment().fill((byte) 9);
      MemorySegment src = arena.allocate(1 << 20, 64);
      src.fill((byte) 4);
      MemoryDescriptor registered = owner.register(src);
      MemorySegment into = reader.allocate(1 << 20).segment();

      read(reader, allocated.descriptor(), into); // hello, the region, and its watch connection
      long first = owner.sideChannelRequests();
      assertTrue(first >= 3, first + " requests for the first read");
      for (int i = 0; i < 20; i++) {
        into.fill((byte) 0);
        read(reader, allocated.descriptor(), into);
        assertEquals(-1, into.mismatch(allocated.segment()), "read " + i + " landed every byte");
      }
      assertEquals(first, owner.sideChannelRequests(), "reads of a known allocated region ask the owner nothing");

      read(reader, registered, into); // the region's lookup (and a poke)
      long afterLookup = settled(owner);
      for (int i = 0; i < 20; i++) {
        into.fill((byte) 0);
        read(reader, registered, into);
        assertEquals(-1, into.mismatch(src), "read " + i + " of registered memory landed every byte");
      }
      assertEquals(afterLookup + 20, settled(owner), "one poke per read of registered memory, no lookup");
    }
  }
}
