package dev.tandem.engine.compute;

import java.lang.foreign.MemorySegment;

/**
 * Causal attention for {@code rows} query rows over one layer's paged KV cache.
 *
 * <p>Row {@code t} has queries {@code q[t, numHeads × headDim]} at sequence position {@code
 * positions[t]} and attends to positions {@code 0..positions[t]} of its sequence, whose KV live in
 * the blocks {@code blockTables[t]} (position p in block {@code blockTables[t][p / blockSize]},
 * slot {@code p % blockSize}). The cache segments hold f32 entries laid out as {@code [block][slot][kvHead][headDim]}.
 * Query head h reads KV head {@code h / (numHeads / numKvHeads)}. The result goes to {@code out},
 * shaped like {@code q}.
 */
public record AttentionBatch(
    float[] q,
    float[] out,
    int rows,
    int[] positions,
    int[][] blockTables,
    MemorySegment keys,
    MemorySegment values,
    int blockSize,
    int numHeads,
    int numKvHeads,
    int headDim) {

  public int kvDim() {
    return numKvHeads * headDim;
  }

  /** Byte offset of (position p of row t's sequence, KV head g) in the cache segments. */
  public long cacheOffset(int t, int p, int g) {
    int block = blockTables[t][p / blockSize];
    long slot = (long) block * blockSize + p % blockSize;
    return (slot * kvDim() + (long) g * headDim) * Float.BYTES;
  }
}
