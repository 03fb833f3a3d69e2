package dev.tandem.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class PageMemoryTest {
  @Test
  void aRegionIsZeroedPageAlignedWritableAndGoneWithItsArena() {
    long bytes = (64L << 20) + 12; // not a whole number of pages
    MemorySegment region;
    try (Arena arena = Arena.ofShared()) {
      region = PageMemory.allocate(arena, bytes);
      assertEquals(bytes, region.byteSize());
      assertEquals(0, region.address() % 4096, "page-aligned");
      assertEquals(-1, region.mismatch(MemorySegment.ofArray(new byte[(int) bytes])), "zeroed");
      region.set(ValueLayout.JAVA_LONG_UNALIGNED, bytes - 8, 0x1234_5678_9abc_def0L);
      region.set(ValueLayout.JAVA_BYTE, 0, (byte) 7);
      assertEquals(0x1234_5678_9abc_def0L, region.get(ValueLayout.JAVA_LONG_UNALIGNED, bytes - 8));
      assertEquals(7, region.get(ValueLayout.JAVA_BYTE, 0));
    }
    MemorySegment closed = region;
    assertThrows(IllegalStateException.class, () -> closed.get(ValueLayout.JAVA_BYTE, 0));
  }

  @Test
  void aFreshRegionIsZeroEvenWhereAnEarlierOneWasWritten() {
    for (int round = 0; round < 3; round++) {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment region = PageMemory.allocate(arena, 8L << 20);
        assertEquals(-1, region.mismatch(MemorySegment.ofArray(new byte[8 << 20])), "round " + round);
        region.fill((byte) 0x5a);
      }
    }
  }

  @Test
  void anEmptyRegionIsEmpty() {
    try (Arena arena = Arena.ofConfined()) {
      assertEquals(0, PageMemory.allocate(arena, 0).byteSize());
    }
  }
}
