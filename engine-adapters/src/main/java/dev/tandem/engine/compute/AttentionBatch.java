package dev.tandem.engine.compute;

import dev.tandem.engine.model.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Causal attention for {@code rows} query rows over one layer's paged KV cache.
 *
 * <p>Row {@code t} has queries {@code q[t, numHeads × headDim]} at sequence position {@code
 * positions[t]} and attends to positions {@code firstVisible(t)..positions[t]} of its sequence: all
 * of them from 0, or with a sliding {@code window} (Mistral's {@code sliding_window}; 0 for none)
 * the last {@code window}, itself included. Their KV live in
 * the blocks {@code blockTables[t]} (position p in block {@code blockTables[t][p / blockSize]},
 * slot {@code p % blockSize}). The cache segments hold {@code kvDtype} entries (f32, bf16 or f16;
 * sums are f32 whatever the entries) laid out as {@code [block][slot][kvHead][headDim]}.
 * Query head h reads KV head {@code h / (numHeads / numKvHeads)}. With a {@code softcap} c > 0
 * (Gemma 2's {@code attn_logit_softcapping}) each scaled score s becomes {@code c·tanh(s/c)} before
 * the softmax. The result goes to {@code out}, shaped like {@code q}.
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
    int headDim,
    DType kvDtype,
    int window,
    float softcap) {
  private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
  private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

  /** Attention with uncapped scores. */
  public AttentionBatch(
      float[] q, float[] out, int rows, int[] positions, int[][] blockTables, MemorySegment keys, MemorySegment values,
      int blockSize, int numHeads, int numKvHeads, int headDim, DType kvDtype, int window) {
    this(q, out, rows, positions, blockTables, keys, values, blockSize, numHeads, numKvHeads, headDim, kvDtype, window, 0f);
  }

  /** A scaled score as the softmax takes it: capped where {@link #softcap} is set. */
  public double capped(double score) {
    return softcap > 0 ? softcap * Math.tanh(score / softcap) : score;
  }

  /** The first position row {@code t} attends to. */
  public int firstVisible(int t) {
    return window > 0 ? Math.max(0, positions[t] - window + 1) : 0;
  }

  public int kvDim() {
    return numKvHeads * headDim;
  }

  /** Byte offset of (position p of row t's sequence, KV head g) in the cache segments. */
  public long cacheOffset(int t, int p, int g) {
    int block = blockTables[t][p / blockSize];
    long slot = (long) block * blockSize + p % blockSize;
    return (slot * kvDim() + (long) g * headDim) * kvDtype.bytes();
  }

  /** Element {@code i} of the head vector at byte {@code offset} of a cache segment, as a float. */
  public float entry(MemorySegment cache, long offset, int i) {
    return switch (kvDtype) {
      case F32 -> cache.get(FLOAT, offset + (long) i * Float.BYTES);
      case F16 -> Float.float16ToFloat(cache.get(SHORT, offset + (long) i * 2));
      case BF16 -> Float.intBitsToFloat(cache.get(SHORT, offset + (long) i * 2) << 16);
      case Q8_0, Q4_0 -> throw new IllegalStateException(kvDtype.shortName() + " is a weight type, never the KV cache's");
    };
  }
}
