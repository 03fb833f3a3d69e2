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

  /**
   * A LoRA adapter's blocks: the first chains onto the adapter's salt, so every block differs from
   * the base model's and another adapter's, while the local hashes (the tokens) stay the same; no
   * adapter is no salt, the hashes Dynamo computes.
   */
  @Test
  void anAdaptersBlocksStartTheirChainOnItsSalt() {
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    long[] plain = BlockHasher.sequenceHashes(tokens, 4);
    assertEquals(BlockHasher.NO_SALT, BlockHasher.salt(null));
    assertEquals(BlockHasher.NO_SALT, BlockHasher.salt(""));
    assertArrayEquals(plain, BlockHasher.sequenceHashes(tokens, 4, BlockHasher.salt(null)));
    long sql = BlockHasher.salt("sql");
    long[] salted = BlockHasher.sequenceHashes(tokens, 4, sql);
    assertEquals(BlockHasher.chain(sql, BlockHasher.localHash(tokens, 0, 4)), salted[0]);
    assertEquals(BlockHasher.chain(salted[0], BlockHasher.localHash(tokens, 4, 4)), salted[1]);
    long[] other = BlockHasher.sequenceHashes(tokens, 4, BlockHasher.salt("chat"));
    for (int b = 0; b < 2; b++) {
      assertNotEquals(plain[b], salted[b]);
      assertNotEquals(other[b], salted[b]);
    }
    // XXH3-64 (seed 1337) of the UTF-8 bytes of "lora:sql": the same in every process, engine or router.
    assertEquals(u64("4295291482276223623"), sql);
  }

  /**
   * vLLM's {@code cache_salt}: requests with different salts (or one without) never share a
   * block's hash, with or without an adapter; the same salt always gives the same hashes; an empty
   * salt is none.
   */
  @Test
  void aCacheSaltSeparatesBlocksFromEveryOtherSaltsAndAdapters() {
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    assertEquals(BlockHasher.salt("sql"), BlockHasher.salt("sql", null));
    assertEquals(BlockHasher.salt(null), BlockHasher.salt(null, ""));
    long[] plain = BlockHasher.sequenceHashes(tokens, 4);
    long[] a = BlockHasher.sequenceHashes(tokens, 4, BlockHasher.salt(null, "tenant-a"));
    long[] b = BlockHasher.sequenceHashes(tokens, 4, BlockHasher.salt(null, "tenant-b"));
    long[] sqlA = BlockHasher.sequenceHashes(tokens, 4, BlockHasher.salt("sql", "tenant-a"));
    long[] sql = BlockHasher.sequenceHashes(tokens, 4, BlockHasher.salt("sql"));
    for (int k = 0; k < 2; k++) {
      java.util.Set<Long> distinct = java.util.Set.of(plain[k], a[k], b[k], sqlA[k], sql[k]);
      assertEquals(5, distinct.size(), "block " + k + ": five salts, five hashes");
    }
    assertArrayEquals(a, BlockHasher.sequenceHashes(tokens, 4, BlockHasher.salt(null, "tenant-a")), "the same salt, the same hashes");
  }
}
