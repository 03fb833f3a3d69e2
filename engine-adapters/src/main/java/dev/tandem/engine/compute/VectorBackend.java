package dev.tandem.engine.compute;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The {@code cpu} backend: Vector API kernels (the machine's preferred vector width) spread over
 * all cores. Weights are widened to f32 in registers as they are read: bf16 by a 16-bit shift, f16
 * by rebasing its exponent. Each kernel is prologue → vector body → scalar tail.
 *
 * <p>Threading: kernels run on the backend's own pool; one call at a time.
 */
public final class VectorBackend implements ComputeBackend {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = F.length();
  private static final VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(L * 16));
  private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  /** Tokens per tile in matmul: the tile's activations stay in cache while the weights stream. */
  private static final int TOKEN_TILE = 32;

  private final ParallelRunner runner;
  private final ThreadLocal<float[]> rowScratch = ThreadLocal.withInitial(() -> new float[0]);
  private final ThreadLocal<float[]> scoreScratch = ThreadLocal.withInitial(() -> new float[0]);

  public VectorBackend(int threads) {
    this.runner = new ParallelRunner(threads);
  }

  @Override
  public String name() {
    return "cpu";
  }

  public int threads() {
    return runner.threads();
  }

  // ---- matmul ------------------------------------------------------------------------------

  @Override
  public void matmul(float[] x, int tokens, WeightMatrix w, float[] out) {
    int rows = w.rows();
    int grain = Math.max(1, 16_384 / Math.max(1, w.cols()));
    if (tokens < 4) {
      runner.forRange(rows, grain, (from, to) -> matvecRows(x, tokens, w, out, from, to));
    } else {
      runner.forRange(rows, grain, (from, to) -> matmulRows(x, tokens, w, out, from, to));
    }
  }

  /** Few tokens: widen each weight chunk in registers and use it for every token. */
  private static void matvecRows(float[] x, int tokens, WeightMatrix w, float[] out, int from, int to) {
    int cols = w.cols();
    int rows = w.rows();
    int upper = F.loopBound(cols);
    MemorySegment data = w.data();
    for (int r = from; r < to; r++) {
      long rowByte = (long) r * cols * w.dtype().bytes();
      for (int t = 0; t < tokens; t++) {
        FloatVector acc = FloatVector.zero(F);
        int xBase = t * cols;
        int i = 0;
        for (; i < upper; i += L) {
          FloatVector wv = load(w, data, rowByte, i);
          acc = FloatVector.fromArray(F, x, xBase + i).fma(wv, acc);
        }
        float sum = acc.reduceLanes(VectorOperators.ADD);
        for (; i < cols; i++) {
          sum += x[xBase + i] * w.get(r, i);
        }
        out[t * rows + r] = sum;
      }
    }
  }

  /**
   * Many tokens: per tile of tokens, widen each weight row once into scratch, then four tokens at a
   * time against it.
   */
  private void matmulRows(float[] x, int tokens, WeightMatrix w, float[] out, int from, int to) {
    int cols = w.cols();
    int rows = w.rows();
    int upper = F.loopBound(cols);
    float[] row = rowScratch.get();
    if (row.length < cols) {
      row = new float[cols];
      rowScratch.set(row);
    }
    for (int tile = 0; tile < tokens; tile += TOKEN_TILE) {
      int tileEnd = Math.min(tokens, tile + TOKEN_TILE);
      for (int r = from; r < to; r++) {
        widenRow(w, r, row);
        int t = tile;
        for (; t + 4 <= tileEnd; t += 4) {
          int b0 = t * cols;
          int b1 = b0 + cols;
          int b2 = b1 + cols;
          int b3 = b2 + cols;
          FloatVector a0 = FloatVector.zero(F);
          FloatVector a1 = FloatVector.zero(F);
          FloatVector a2 = FloatVector.zero(F);
          FloatVector a3 = FloatVector.zero(F);
          int i = 0;
          for (; i < upper; i += L) {
            FloatVector wv = FloatVector.fromArray(F, row, i);
            a0 = FloatVector.fromArray(F, x, b0 + i).fma(wv, a0);
            a1 = FloatVector.fromArray(F, x, b1 + i).fma(wv, a1);
            a2 = FloatVector.fromArray(F, x, b2 + i).fma(wv, a2);
            a3 = FloatVector.fromArray(F, x, b3 + i).fma(wv, a3);
          }
          float s0 = a0.reduceLanes(VectorOperators.ADD);
          float s1 = a1.reduceLanes(VectorOperators.ADD);
          float s2 = a2.reduceLanes(VectorOperators.ADD);
          float s3 = a3.reduceLanes(VectorOperators.ADD);
          for (; i < cols; i++) {
            s0 += x[b0 + i] * row[i];
            s1 += x[b1 + i] * row[i];
            s2 += x[b2 + i] * row[i];
            s3 += x[b3 + i] * row[i];
          }
          out[t * rows + r] = s0;
          out[(t + 1) * rows + r] = s1;
          out[(t + 2) * rows + r] = s2;
          out[(t + 3) * rows + r] = s3;
        }
        for (; t < tileEnd; t++) {
          out[t * rows + r] = dot(x, t * cols, row, 0, cols);
        }
      }
    }
  }

  private static void widenRow(WeightMatrix w, int r, float[] row) {
    int cols = w.cols();
    int upper = F.loopBound(cols);
    long rowByte = (long) r * cols * w.dtype().bytes();
    MemorySegment data = w.data();
    int i = 0;
    for (; i < upper; i += L) {
      load(w, data, rowByte, i).intoArray(row, i);
    }
    for (; i < cols; i++) {
      row[i] = w.get(r, i);
    }
  }

  /** L weights of a row starting at column {@code i}, widened to f32. */
  private static FloatVector load(WeightMatrix w, MemorySegment data, long rowByte, int i) {
    return switch (w.dtype()) {
      case F32 -> FloatVector.fromMemorySegment(F, data, rowByte + (long) i * 4, LE);
      case BF16 -> bf16(data, rowByte + (long) i * 2);
      case F16 -> f16(data, rowByte + (long) i * 2);
    };
  }

  private static IntVector shortsAsInts(MemorySegment data, long offset) {
    return (IntVector) ShortVector.fromMemorySegment(S, data, offset, LE).convertShape(VectorOperators.S2I, I, 0);
  }

  /** bf16 is the top half of an f32: shift it back into place. */
  private static FloatVector bf16(MemorySegment data, long offset) {
    return shortsAsInts(data, offset).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
  }

  /**
   * f16 → f32: move exponent and mantissa up 13 bits and rescale by 2^112 (which also turns
   * subnormals into normals); infinities and NaNs keep an all-ones exponent; then the sign.
   */
  private static FloatVector f16(MemorySegment data, long offset) {
    IntVector h = shortsAsInts(data, offset);
    IntVector magnitude = h.and(0x7fff).lanewise(VectorOperators.LSHL, 13);
    FloatVector value = magnitude.reinterpretAsFloats().mul(0x1p112f);
    VectorMask<Integer> special = h.and(0x7c00).eq(0x7c00);
    IntVector bits = value.reinterpretAsInts().blend(magnitude.or(0x7f800000), special);
    return bits.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
  }

  private static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
    int upper = F.loopBound(n);
    FloatVector acc = FloatVector.zero(F);
    int i = 0;
    for (; i < upper; i += L) {
      acc = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc);
    }
    float sum = acc.reduceLanes(VectorOperators.ADD);
    for (; i < n; i++) {
      sum += a[aOff + i] * b[bOff + i];
    }
    return sum;
  }

  // ---- element-wise kernels -----------------------------------------------------------------

  @Override
  public void rmsNorm(float[] x, float[] out, float[] weight, float eps, int rows, int dim) {
    runner.forRange(rows, Math.max(1, 8192 / dim), (from, to) -> {
      int upper = F.loopBound(dim);
      for (int t = from; t < to; t++) {
        int base = t * dim;
        float ss = dot(x, base, x, base, dim);
        float inv = (float) (1.0 / Math.sqrt(ss / dim + eps));
        int i = 0;
        for (; i < upper; i += L) {
          FloatVector.fromArray(F, x, base + i)
              .mul(inv)
              .mul(FloatVector.fromArray(F, weight, i))
              .intoArray(out, base + i);
        }
        for (; i < dim; i++) {
          out[base + i] = x[base + i] * inv * weight[i];
        }
      }
    });
  }

  @Override
  public void rope(float[] x, int rows, int heads, int headDim, int[] positions, float[] invFreq) {
    int half = headDim / 2;
    runner.forRange(rows, 8, (from, to) -> {
      float[] cos = new float[half];
      float[] sin = new float[half];
      int upper = F.loopBound(half);
      for (int t = from; t < to; t++) {
        for (int i = 0; i < half; i++) {
          double angle = (double) positions[t] * invFreq[i];
          cos[i] = (float) Math.cos(angle);
          sin[i] = (float) Math.sin(angle);
        }
        for (int h = 0; h < heads; h++) {
          int base = (t * heads + h) * headDim;
          int i = 0;
          for (; i < upper; i += L) {
            FloatVector a = FloatVector.fromArray(F, x, base + i);
            FloatVector b = FloatVector.fromArray(F, x, base + half + i);
            FloatVector c = FloatVector.fromArray(F, cos, i);
            FloatVector s = FloatVector.fromArray(F, sin, i);
            a.mul(c).sub(b.mul(s)).intoArray(x, base + i);
            b.mul(c).add(a.mul(s)).intoArray(x, base + half + i);
          }
          for (; i < half; i++) {
            float a = x[base + i];
            float b = x[base + half + i];
            x[base + i] = a * cos[i] - b * sin[i];
            x[base + half + i] = b * cos[i] + a * sin[i];
          }
        }
      }
    });
  }

  @Override
  public void siluMul(float[] gate, float[] up, int n) {
    runner.forRange(n, 4096, (from, to) -> {
      int i = from;
      int upper = from + F.loopBound(to - from);
      for (; i < upper; i += L) {
        FloatVector g = FloatVector.fromArray(F, gate, i);
        FloatVector silu = g.div(g.neg().lanewise(VectorOperators.EXP).add(1f));
        silu.mul(FloatVector.fromArray(F, up, i)).intoArray(gate, i);
      }
      for (; i < to; i++) {
        float g = gate[i];
        gate[i] = g / (1f + (float) Math.exp(-g)) * up[i];
      }
    });
  }

  // ---- attention ----------------------------------------------------------------------------

  @Override
  public void attention(AttentionBatch b) {
    int heads = b.numHeads();
    runner.forRange(b.rows() * heads, 1, (from, to) -> {
      for (int job = from; job < to; job++) {
        attendOne(b, job / heads, job % heads);
      }
    });
  }

  private void attendOne(AttentionBatch b, int t, int h) {
    int headDim = b.headDim();
    int group = b.numHeads() / b.numKvHeads();
    int g = h / group;
    int len = b.positions()[t] + 1;
    float scale = (float) (1.0 / Math.sqrt(headDim));
    float[] q = b.q();
    int qBase = (t * b.numHeads() + h) * headDim;
    float[] scores = scoreScratch.get();
    if (scores.length < len) {
      scores = new float[Math.max(len, scores.length * 2)];
      scoreScratch.set(scores);
    }
    MemorySegment keys = b.keys();
    MemorySegment values = b.values();
    int upper = F.loopBound(headDim);

    // Scores q·k for every visible position, and their maximum.
    float max = Float.NEGATIVE_INFINITY;
    for (int p = 0; p < len; p++) {
      long off = b.cacheOffset(t, p, g);
      FloatVector acc = FloatVector.zero(F);
      int i = 0;
      for (; i < upper; i += L) {
        acc = FloatVector.fromArray(F, q, qBase + i)
            .fma(FloatVector.fromMemorySegment(F, keys, off + (long) i * 4, LE), acc);
      }
      float s = acc.reduceLanes(VectorOperators.ADD);
      for (; i < headDim; i++) {
        s += q[qBase + i] * keys.get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, off + (long) i * 4);
      }
      s *= scale;
      scores[p] = s;
      max = Math.max(max, s);
    }

    // Softmax weights.
    float sum = 0;
    for (int p = 0; p < len; p++) {
      float e = (float) Math.exp(scores[p] - max);
      scores[p] = e;
      sum += e;
    }
    float inv = 1f / sum;

    // Weighted sum of values, written straight into the output row.
    float[] out = b.out();
    java.util.Arrays.fill(out, qBase, qBase + headDim, 0f);
    for (int p = 0; p < len; p++) {
      long off = b.cacheOffset(t, p, g);
      float wgt = scores[p] * inv;
      int i = 0;
      for (; i < upper; i += L) {
        FloatVector.fromMemorySegment(F, values, off + (long) i * 4, LE)
            .fma(FloatVector.broadcast(F, wgt), FloatVector.fromArray(F, out, qBase + i))
            .intoArray(out, qBase + i);
      }
      for (; i < headDim; i++) {
        out[qBase + i] += wgt * values.get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, off + (long) i * 4);
      }
    }
  }

  @Override
  public void close() {
    runner.close();
  }

  /** Registers the Vector API backend (priority 10: the default on CPU). */
  public static final class Provider implements ComputeBackendProvider {
    @Override
    public String name() {
      return "cpu";
    }

    @Override
    public boolean isAvailable() {
      return ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
    }

    @Override
    public int priority() {
      return 10;
    }

    @Override
    public ComputeBackend create(int threads) {
      return new VectorBackend(threads);
    }
  }
}
