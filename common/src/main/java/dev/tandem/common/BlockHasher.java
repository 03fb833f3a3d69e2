package dev.tandem.common;

import com.dynatrace.hash4j.hashing.Hasher64;
import com.dynatrace.hash4j.hashing.Hashing;

/**
 * Block hashing shared by engine, mocker and router (DESIGN.md, "Block hashing"; compatible with
 * Dynamo). Only full blocks are hashed.
 *
 * <ul>
 *   <li>local hash = XXH3-64 (seed 1337) over the block's token ids, each a little-endian u32;
 *   <li>sequence hash: {@code seq[0] = local[0]}, {@code seq[i] = XXH3-64(seed 1337, LE u64
 *       [seq[i-1], local[i]])}.
 *   <li>a block computed under a LoRA adapter, or for a request with vLLM's {@code cache_salt},
 *       starts its chain on its {@link #salt(String, String)}: {@code seq[0] = XXH3-64(seed 1337,
 *       LE u64 [salt, local[0]])}.
 * </ul>
 *
 * <p>Stateless and thread-safe.
 */
public final class BlockHasher {
  /** The seed Dynamo uses for both hashes. */
  public static final long SEED = 1337L;

  /** No salt: the base model's blocks, hashed as Dynamo hashes them. */
  public static final long NO_SALT = 0L;

  private static final Hasher64 XXH3 = Hashing.xxh3_64(SEED);

  private BlockHasher() {}

  /** XXH3-64 (seed 1337) of raw bytes; exposed for the golden-value test. */
  public static long hashBytes(byte[] bytes) {
    return XXH3.hashBytesToLong(bytes);
  }

  /** Local hash of {@code length} tokens starting at {@code from}, each as a little-endian u32. */
  public static long localHash(int[] tokens, int from, int length) {
    byte[] bytes = new byte[length * 4];
    for (int i = 0; i < length; i++) {
      int t = tokens[from + i];
      bytes[4 * i] = (byte) t;
      bytes[4 * i + 1] = (byte) (t >>> 8);
      bytes[4 * i + 2] = (byte) (t >>> 16);
      bytes[4 * i + 3] = (byte) (t >>> 24);
    }
    return XXH3.hashBytesToLong(bytes);
  }

  /** Chains a block's local hash onto its parent's sequence hash. */
  public static long chain(long parentSequenceHash, long localHash) {
    byte[] bytes = new byte[16];
    putLongLe(bytes, 0, parentSequenceHash);
    putLongLe(bytes, 8, localHash);
    return XXH3.hashBytesToLong(bytes);
  }

  /** Local hashes of every full block of {@code tokens}. */
  public static long[] localHashes(int[] tokens, int blockSize) {
    int blocks = tokens.length / blockSize;
    long[] out = new long[blocks];
    for (int b = 0; b < blocks; b++) {
      out[b] = localHash(tokens, b * blockSize, blockSize);
    }
    return out;
  }

  /** Sequence hashes of every full block of {@code tokens}. */
  public static long[] sequenceHashes(int[] tokens, int blockSize) {
    return chainAll(localHashes(tokens, blockSize));
  }

  /** Sequence hashes of every full block of {@code tokens} computed under {@code salt} ({@link #salt}; 0: none). */
  public static long[] sequenceHashes(int[] tokens, int blockSize, long salt) {
    return chainAll(localHashes(tokens, blockSize), salt);
  }

  /** Sequence hashes from local hashes. */
  public static long[] chainAll(long[] localHashes) {
    return chainAll(localHashes, NO_SALT);
  }

  /** Sequence hashes from local hashes, under {@code salt} (0: none). */
  public static long[] chainAll(long[] localHashes, long salt) {
    long[] out = new long[localHashes.length];
    for (int i = 0; i < localHashes.length; i++) {
      out[i] = i == 0 ? first(salt, localHashes[0]) : chain(out[i - 1], localHashes[i]);
    }
    return out;
  }

  /**
   * The salt of blocks computed with LoRA adapter {@code loraName} (null or empty: the base model,
   * {@link #NO_SALT}). Keys and values under an adapter differ from the base model's for the same
   * tokens, so the first block's sequence hash is chained onto the salt instead of being its local
   * hash, and every later block differs through the chain: engines and routers that derive the salt
   * from the adapter's name agree on every hash without sharing anything else.
   */
  public static long salt(String loraName) {
    if (loraName == null || loraName.isEmpty()) {
      return NO_SALT;
    }
    long s = XXH3.hashBytesToLong(("lora:" + loraName).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    return s == NO_SALT ? 1 : s;
  }

  /**
   * The salt of blocks computed with LoRA adapter {@code loraName} for a request with vLLM's
   * {@code cache_salt} (null or empty: none, {@link #salt(String)}): the adapter's salt chained
   * onto the cache salt's hash, so that only requests with the same cache salt (and adapter) share
   * cached blocks — a tenant's prompts cannot be probed for by another's cache hits.
   */
  public static long salt(String loraName, String cacheSalt) {
    long adapter = salt(loraName);
    if (cacheSalt == null || cacheSalt.isEmpty()) {
      return adapter;
    }
    long s = chain(adapter, XXH3.hashBytesToLong(("cache_salt:" + cacheSalt).getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    return s == NO_SALT ? 1 : s;
  }

  /** The first block's sequence hash under {@code salt}: its local hash without one. */
  public static long first(long salt, long localHash) {
    return salt == NO_SALT ? localHash : chain(salt, localHash);
  }

  private static void putLongLe(byte[] bytes, int at, long v) {
    for (int i = 0; i < 8; i++) {
      bytes[at + i] = (byte) (v >>> (8 * i));
    }
  }

}
