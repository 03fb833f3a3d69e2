package dev.tandem.common;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Golden values from DESIGN.md; they pin compatibility with Dynamo's router. */
class BlockHasherTest {
  private static long u64(String decimal) {
    return Long.parseUnsignedLong(decimal);
  }

  @Test
  void rawBytesMatchGolden() {
    assertEquals(
        u64("13226331709069118873"),
        BlockHasher.hashBytes("test data".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void localHashesMatchGolden() {
    assertEquals(u64("14643705804678351452"), BlockHasher.localHash(new int[] {1, 2, 3, 4}, 0, 4));
    assertEquals(u64("16777012769546811212"), BlockHasher.localHash(new int[] {5, 6, 7, 8}, 0, 4));
  }

  @Test
  void sequenceHashesChainAsGolden() {
    long[] seq = BlockHasher.sequenceHashes(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, 4);
    assertArrayEquals(new long[] {u64("14643705804678351452"), u64("4945711292740353085")}, seq);
  }

  @Test
  void trailingPartialBlockIsNotHashed() {
    assertEquals(2, BlockHasher.sequenceHashes(new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9}, 4).length);
    assertEquals(0, BlockHasher.sequenceHashes(new int[] {1, 2, 3}, 4).length);
  }

  @Test
  void sameBlockUnderDifferentPrefixHasDifferentSequenceHash() {
    long[] a = BlockHasher.sequenceHashes(new int[] {1, 2, 3, 4, 9, 9, 9, 9}, 4);
    long[] b = BlockHasher.sequenceHashes(new int[] {5, 6, 7, 8, 9, 9, 9, 9}, 4);
    assertNotEquals(a[1], b[1]);
    assertEquals(
        BlockHasher.localHash(new int[] {9, 9, 9, 9}, 0, 4),
        BlockHasher.localHashes(new int[] {1, 2, 3, 4, 9, 9, 9, 9}, 4)[1]);
  }

  @Test
  void tokenIdsAboveSignedRangeAreHashedAsUnsigned() {
    // u32 token ids are encoded little-endian; ids >= 2^31 must not collide with small ones.
    assertNotEquals(
        BlockHasher.localHash(new int[] {0x80000001}, 0, 1),
        BlockHasher.localHash(new int[] {1}, 0, 1));
  }
}
