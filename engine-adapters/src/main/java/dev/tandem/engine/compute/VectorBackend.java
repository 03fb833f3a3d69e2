package dev.tandem.engine.compute;

import dev.tandem.engine.model.DType;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The {@code cpu} backend: Vector API kernels (the machine's preferred vector width) spread over
 * all cores. Weights are widened to f32 in registers as they are read: bf16 by a 16-bit shift or
 * mask, f16 by rebasing its exponent. Each kernel is prologue → vector body → scalar tail.
 *
 * <p>One algorithm over 400 lines: the forward pass's kernels (matmul per weight dtype, attention,
 * norms, RoPE, activations), each written out in full with its scalar tail.
 *
 * <p>Threading: kernels run on the backend's own pool; one call at a time.
 */
public final class VectorBackend implements ComputeBackend {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = F.length();
  private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  /** Tokens per tile in matmul: the tile's activations stay in cache while the weights stream. */
  private static final int TOKEN_TILE = 32;
  /** Output rows of one packed panel of the outer-product kernel: two vectors. */
  private static final int PANEL = 2 * L;
  /** Tokens of one micro-tile of the outer-product kernel: its 2 × 6 accumulators stay in registers. */
  private static final int MICRO_TOKENS = 6;
  /** Tokens of the widest micro-tile: ten where vectors are 512 bits (32 registers), else six. */
  private static final int WIDE_MICRO_TOKENS = F.vectorBitSize() >= 512 ? 10 : MICRO_TOKENS;
  /** Columns of one slice of a panel: a slice (K_SLICE × PANEL floats) stays in L1 while every token passes over it. */
  private static final int K_SLICE = 128;
  /**
   * From this many tokens matmul packs the weights into panels and runs the outer-product kernel:
   * packing a panel costs about as much as 32 tokens' products with it.
   */
  static final int OUTER_MIN_TOKENS = 64;

  private final ParallelRunner runner;
  private volatile boolean touchAhead; // see streamsWeightsPerStep
  private final ThreadLocal<float[]> rowScratch = ThreadLocal.withInitial(() -> new float[0]);
  /** A tile's sums for the matrix's last, partial panel: PANEL floats a token. */
  private final ThreadLocal<float[]> tileScratch = ThreadLocal.withInitial(() -> new float[0]);
  /** Packed panels of the outer-product kernel: {@code cols × PANEL} floats each, the PANEL rows' weights of a column together. */
  private final ThreadLocal<float[]> panelScratch = ThreadLocal.withInitial(() -> new float[0]);
  private final ThreadLocal<float[]> scoreScratch = ThreadLocal.withInitial(() -> new float[0]);
  /** Query and output heads of an attention job (permuted for 16-bit KV). */
  private final ThreadLocal<float[]> headScratch = ThreadLocal.withInitial(() -> new float[0]);
  /** The calling thread's: each decode chunk's running maximum, sum and output per head ({@link #attendSingleRows}). */
  private final ThreadLocal<float[]> partialScratch = ThreadLocal.withInitial(() -> new float[0]);
  /** A run of rows' KV head gathered as f32: keys transposed, values as they are. */
  private final ThreadLocal<float[]> keyTScratch = ThreadLocal.withInitial(() -> new float[0]);
  private final ThreadLocal<float[]> valueScratch = ThreadLocal.withInitial(() -> new float[0]);

  public VectorBackend(int threads) {
    this(threads, SHARED_PANEL_FLOATS);
  }

  /** {@code sharedPanelFloats}: the most floats prefill runs may gather their sequences' KV into, shared (0: each run gathers its own). */
  VectorBackend(int threads, long sharedPanelFloats) {
    this.runner = new ParallelRunner(threads);
    this.sharedPanelFloats = sharedPanelFloats;
  }

  @Override
  public String name() {
    return "cpu";
  }

  public int threads() {
    return runner.threads();
  }

  // ---- matmul ------------------------------------------------------------------------------
  //
  // 16-bit weights are read as ints, two weights each: the low halves (even columns) and the high
  // halves (odd columns) widen with one shift or mask, no lane shuffles. The activations are
  // permuted to match once per call: within each block of 2L columns, the L even columns first,
  // then the L odd ones. A dot product does not care about order, so the sums are the same.

  private float[] permuted = new float[0];

  /**
   * Rows longer than this (bf16 weights, one token) dot with the activations rounded to bf16 and
   * packed two to an int, as the weights are: a row of 8,192 f32 activations (32 KB) is pushed out of
   * a 48 KB L1 by the weights streaming past it and re-read from L2 for every row, which held such
   * rows to ~25 GB/s where shorter ones stream at 40+ (MatvecLoadCost, 9,216 columns: 20 → 36 GB/s
   * packed). llama.cpp rounds activations to bf16 for bf16 weights at every size; here only the
   * long rows are, and only at batch 1, the one case whose speed they set (docs/benchmarks.md).
   */
  static final int PACKED_ACTIVATION_MIN_COLS = 4097;

  private int[] packed = new int[0];

  @Override
  public void matmul(float[] x, int tokens, WeightMatrix w, float[] out) {
    matmul(x, tokens, new WeightMatrix[] {w}, new float[][] {out});
  }

  @Override
  public void matmul(float[] x, int tokens, WeightMatrix[] ws, float[][] outs) {
    DType dtype = ws[0].dtype();
    int cols = ws[0].cols();
    int[] firstRow = new int[ws.length + 1];
    for (int m = 0; m < ws.length; m++) {
      if (ws[m].dtype() != dtype || ws[m].cols() != cols) {
        for (int k = 0; k < ws.length; k++) { // mixed types: one job each
          matmul(x, tokens, ws[k], outs[k]);
        }
        return;
      }
      firstRow[m + 1] = firstRow[m] + ws[m].rows();
    }
    boolean packs = tokens == 1 && cols >= PACKED_ACTIVATION_MIN_COLS;
    int[] pairs = packs && dtype == DType.BF16 ? bf16Pairs(x, cols) : packs && dtype.quantized() ? interleavedActivationPairs(x, cols) : null;
    float[] in = dtype == DType.F32 || dtype.quantized() || pairs != null ? x : permutedRows(x, tokens, cols);
    if (tokens >= OUTER_MIN_TOKENS) {
      // Panels of PANEL output rows, numbered across the matrices; each belongs to one matrix.
      int[] firstPanel = new int[ws.length + 1];
      for (int m = 0; m < ws.length; m++) {
        firstPanel[m + 1] = firstPanel[m] + (ws[m].rows() + PANEL - 1) / PANEL;
      }
      runner.forRange(firstPanel[ws.length], 1, (from, to) -> panelProducts(in, tokens, ws, outs, firstPanel, from, to));
      return;
    }
    int grain = Math.max(1, 16_384 / Math.max(1, cols));
    boolean ahead = touchAhead;
    RowJob job = pairs != null
        ? switch (dtype) {
          case Q8_0 -> (w, out, lo, hi) -> packedQ8Rows(pairs, w, out, lo, hi);
          case Q4_0 -> (w, out, lo, hi) -> packedQ4Rows(pairs, w, out, lo, hi);
          default -> (w, out, lo, hi) -> packedRows(pairs, in, w, out, lo, hi, ahead);
        }
        : tokens < 4
            ? switch (dtype) {
              case Q8_0 -> (w, out, lo, hi) -> q8Rows(in, tokens, w, out, lo, hi);
              case Q4_0 -> (w, out, lo, hi) -> q4Rows(in, tokens, w, out, lo, hi);
              default -> (w, out, lo, hi) -> matvecRows(in, tokens, w, out, lo, hi, ahead);
            }
            : (w, out, lo, hi) -> matmulRows(in, tokens, w, out, lo, hi);
    // One range over the rows of all matrices; each chunk is cut at matrix boundaries.
    runner.forRange(firstRow[ws.length], grain, (from, to) -> {
      for (int m = 0; m < ws.length; m++) {
        int lo = Math.max(from, firstRow[m]) - firstRow[m];
        int hi = Math.min(to, firstRow[m + 1]) - firstRow[m];
        if (lo < hi) {
          job.rows(ws[m], outs[m], lo, hi);
        }
      }
    });
  }

  /**
   * Rows {@code [lo, hi)} of one matrix through one kernel. Each kernel is its own job so that the
   * JIT compiles it as its own unit: one body calling the Q8_0 and Q4_0 kernels beside the 16-bit
   * ones ran out of its inlining budget in some runs and left one kernel's vector operations as
   * calls (a 2B model's Q4_0 layers at 1.6 GB/s, or Phi-3's Q8_0 LM head at 3.6, in 1 to 2 runs of 3).
   */
  @FunctionalInterface
  private interface RowJob {
    void rows(WeightMatrix w, float[] out, int lo, int hi);
  }

  /**
   * {@code x}'s rows in the order of widened 16-bit weights, in this backend's buffer (valid until
   * the next matmul). Split over the threads from a few tokens up: at 2,048 tokens a serial pass
   * cost ~10% of a two-thread matmul.
   */
  private float[] permutedRows(float[] x, int tokens, int cols) {
    int n = tokens * cols;
    if (permuted.length < n) {
      permuted = new float[n];
    }
    float[] into = permuted;
    runner.forRange(tokens, Math.max(1, 65_536 / Math.max(1, cols)), (from, to) -> permuteEvenOdd(x, into, from, to, cols));
    return into;
  }

  /** Rows {@code [from, to)}: within each full block of 2L columns, even columns, then odd ones. */
  private static void permuteEvenOdd(float[] x, float[] xs, int from, int to, int cols) {
    for (int t = from; t < to; t++) {
      permuteEvenOdd(x, t * cols, xs, t * cols, cols);
    }
  }

  /** {@code n} floats from {@code x[from]} to {@code xs[to]}, each full 2L block as even elements then odd. */
  private static void permuteEvenOdd(float[] x, int from, float[] xs, int to, int n) {
    int blocks = n / (2 * L);
    for (int b = 0; b < blocks; b++) {
      int o = b * 2 * L;
      for (int k = 0; k < L; k++) {
        xs[to + o + k] = x[from + o + 2 * k];
        xs[to + o + L + k] = x[from + o + 2 * k + 1];
      }
    }
    System.arraycopy(x, from + blocks * 2 * L, xs, to + blocks * 2 * L, n - blocks * 2 * L);
  }

  /** The inverse of {@link #permuteEvenOdd(float[], int, float[], int, int)}. */
  private static void unpermuteEvenOdd(float[] xs, int from, float[] x, int to, int n) {
    int blocks = n / (2 * L);
    for (int b = 0; b < blocks; b++) {
      int o = b * 2 * L;
      for (int k = 0; k < L; k++) {
        x[to + o + 2 * k] = xs[from + o + k];
        x[to + o + 2 * k + 1] = xs[from + o + L + k];
      }
    }
    System.arraycopy(xs, from + blocks * 2 * L, x, to + blocks * 2 * L, n - blocks * 2 * L);
  }

  /**
   * One token's activations rounded to bf16 (to nearest, ties to even) two to an int in column
   * order — the low half the even column, as a weight int holds them — in this backend's buffer
   * (valid until the next matmul).
   */
  private int[] bf16Pairs(float[] x, int cols) {
    if (packed.length < cols / 2) {
      packed = new int[cols / 2];
    }
    int[] into = packed;
    for (int k = 0; k < cols / 2; k++) {
      into[k] = (DType.BF16.narrow(x[2 * k + 1]) << 16) | (DType.BF16.narrow(x[2 * k]) & 0xffff);
    }
    return into;
  }

  /** One token, rows longer than {@link #PACKED_ACTIVATION_MIN_COLS}: both sides bf16 pairs, widened alike. */
  private static void packedRows(int[] pairs, float[] x, WeightMatrix w, float[] out, int from, int to, boolean touchAhead) {
    int cols = w.cols();
    int upper = (cols / (2 * L)) * 2 * L;
    MemorySegment data = w.data();
    long last = data.byteSize() - Integer.BYTES;
    for (int r = from; r < to; r++) {
      long rowByte = (long) r * cols * 2;
      FloatVector a0 = FloatVector.zero(F);
      FloatVector a1 = FloatVector.zero(F);
      int touched = 0;
      for (int i = 0; i < upper; i += 2 * L) {
        if (touchAhead) { // as dotHalfPairsTouchingAhead does
          touched ^= data.get(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, Math.min(rowByte + i * 2L + TOUCH_AHEAD, last));
        }
        IntVector weights = IntVector.fromMemorySegment(I, data, rowByte + i * 2L, LE);
        IntVector acts = IntVector.fromArray(I, pairs, i / 2);
        a0 = bf16Low(acts).fma(bf16Low(weights), a0);
        a1 = bf16High(acts).fma(bf16High(weights), a1);
      }
      float sum = a0.add(a1).reduceLanes(VectorOperators.ADD) + (touched == 0x7fc0_0001 ? Float.MIN_VALUE : 0f);
      for (int i = upper; i < cols; i++) {
        sum += x[i] * w.get(r, i);
      }
      out[r] = sum;
    }
  }

  /** Few tokens: widen each weight chunk in registers and use it for every token. */
  private static void matvecRows(float[] x, int tokens, WeightMatrix w, float[] out, int from, int to, boolean touchAhead) {
    int cols = w.cols();
    int rows = w.rows();
    MemorySegment data = w.data();
    DType dtype = w.dtype();
    for (int r = from; r < to; r++) {
      for (int t = 0; t < tokens; t++) {
        // The row comes from memory for the first token only; the others find it in cache.
        out[t * rows + r] = switch (dtype) {
          case F32 -> dotF32(x, t * cols, data, r, cols);
          case F16, BF16 -> dotHalves(x, t * cols, w, data, r, cols, touchAhead && t == 0);
          case Q8_0, Q4_0 -> throw new IllegalStateException(dtype + " rows go through q8Rows / q4Rows");
        };
      }
    }
  }

  /** Few tokens, Q8_0 rows {@code [from, to)}: each row from memory for the first token, from cache for the others. */
  private static void q8Rows(float[] x, int tokens, WeightMatrix w, float[] out, int from, int to) {
    int cols = w.cols();
    int rows = w.rows();
    MemorySegment data = w.data();
    for (int r = from; r < to; r++) {
      for (int t = 0; t < tokens; t++) {
        out[t * rows + r] = dotQ8(x, t * cols, w, data, r);
      }
    }
  }

  /** Few tokens, Q4_0 rows {@code [from, to)}, as {@link #q8Rows}. */
  private static void q4Rows(float[] x, int tokens, WeightMatrix w, float[] out, int from, int to) {
    int cols = w.cols();
    int rows = w.rows();
    MemorySegment data = w.data();
    for (int r = from; r < to; r++) {
      for (int t = 0; t < tokens; t++) {
        out[t * rows + r] = dotQ4(x, t * cols, w, data, r);
      }
    }
  }

  /**
   * How far ahead of a row's vector loads {@link #dotHalfPairsTouchingAhead} touches the weights
   * with one plain load per pass: a software prefetch by hand (the Vector API has none), which
   * starts each 4 KB page's address translation and the prefetcher on it before the loop's own
   * loads get there. MatvecLoadCost, 2 threads, rows of 3,072 from a mapped model: medians 30 → 38
   * and 35 → 40 GB/s in two runs; 1–4 KB ahead help alike, 8 KB does not.
   */
  private static final long TOUCH_AHEAD = 2048;

  /**
   * Models streaming more weight bytes a step than this are read touching ahead: batch-1 decode of
   * a 9.1 GB model ran 10–21% faster with it, a 3.2 GB one no faster, and 1.2 and 1.9 GB models
   * about 4% slower (the extra loads cost more than the translations they hide; docs/benchmarks.md).
   */
  static final long TOUCH_AHEAD_MIN_BYTES = 4L << 30;

  /** Above {@link #TOUCH_AHEAD_MIN_BYTES}, batch-1 rows are read touching ahead. */
  @Override
  public void streamsWeightsPerStep(long bytes) {
    touchAhead = bytes > TOUCH_AHEAD_MIN_BYTES;
  }

  private static float dotF32(float[] x, int xBase, MemorySegment data, int r, int cols) {
    long rowByte = (long) r * cols * 4;
    int upper = (cols / (2 * L)) * 2 * L;
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    int i = 0;
    for (; i < upper; i += 2 * L) {
      a0 = FloatVector.fromArray(F, x, xBase + i).fma(FloatVector.fromMemorySegment(F, data, rowByte + i * 4L, LE), a0);
      a1 = FloatVector.fromArray(F, x, xBase + i + L).fma(FloatVector.fromMemorySegment(F, data, rowByte + (i + L) * 4L, LE), a1);
    }
    float sum = a0.add(a1).reduceLanes(VectorOperators.ADD);
    for (; i < cols; i++) {
      sum += x[xBase + i] * data.get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, rowByte + i * 4L);
    }
    return sum;
  }

  // ---- Q8_0 weights ------------------------------------------------------------------------
  //
  // A Q8_0 row comes in interleaves of 64 values (WeightMatrix): an int load of L lanes (L ≤ 16:
  // vectors are at most 512 bits) holds, in its four bytes, four runs of L consecutive values (16
  // apart), each widened by a left shift, an arithmetic right shift and a conversion — no
  // permutation of the activations. Each group of 32 is summed on its own and then scaled, into two
  // accumulators so that no FMA waits on another across groups. Touching ahead is not done: at one
  // byte a weight the largest models stream half what made it pay for bf16.

  /**
   * One token's activations rounded to bf16 two to an int in the order of Q8_0's interleave (in
   * this backend's buffer, valid until the next matmul): for each 64 columns from c, int c/2 + j
   * holds columns c + j (low half) and c + 16 + j, int c/2 + 16 + j columns c + 32 + j and c + 48 +
   * j — so that the low and high halves of an int load line up with the four runs of an interleave.
   * Q4_0's interleave of 128 is two of 64 in this order: its runs 2m and 2m + 1 are ints c/2 + 16m + j.
   */
  private int[] interleavedActivationPairs(float[] x, int cols) {
    if (packed.length < cols / 2) {
      packed = new int[cols / 2];
    }
    int[] into = packed;
    for (int c = 0; c < cols; c += WeightMatrix.Q8_CHUNK) {
      for (int j = 0; j < 16; j++) {
        into[c / 2 + j] = (DType.BF16.narrow(x[c + 16 + j]) << 16) | (DType.BF16.narrow(x[c + j]) & 0xffff);
        into[c / 2 + 16 + j] = (DType.BF16.narrow(x[c + 48 + j]) << 16) | (DType.BF16.narrow(x[c + 32 + j]) & 0xffff);
      }
    }
    return into;
  }

  /**
   * One token through Q8_0 rows longer than {@link #PACKED_ACTIVATION_MIN_COLS}, the activations
   * as {@link #q8ActivationPairs} packs them: at one weight byte a value, f32 activations are four
   * bytes read per weight byte, and a row of 9,216 of them (36 KB) leaves a 48 KB L1 as the weights
   * stream past: a 2B model's down projection ran at half the speed of its other matrices.
   */
  private static void packedQ8Rows(int[] pairs, WeightMatrix w, float[] out, int from, int to) {
    int cols = w.cols();
    MemorySegment data = w.data();
    for (int r = from; r < to; r++) {
      long rowByte = (long) r * cols;
      long scaleByte = w.scaleByte(r, 0);
      FloatVector acc0 = FloatVector.zero(F);
      FloatVector acc1 = FloatVector.zero(F);
      for (int c = 0; c < cols; c += WeightMatrix.Q8_CHUNK, scaleByte += 4) {
        FloatVector g0 = FloatVector.zero(F);
        FloatVector g1 = FloatVector.zero(F);
        for (int h = 0; h < 16; h += L) {
          IntVector v = IntVector.fromMemorySegment(I, data, rowByte + c + 4L * h, LE);
          IntVector runs01 = IntVector.fromArray(I, pairs, c / 2 + h);
          IntVector runs23 = IntVector.fromArray(I, pairs, c / 2 + 16 + h);
          g0 = bf16Low(runs01).fma(q8Values(v, 0), g0);
          g0 = bf16High(runs01).fma(q8Values(v, 1), g0);
          g1 = bf16Low(runs23).fma(q8Values(v, 2), g1);
          g1 = bf16High(runs23).fma(q8Values(v, 3), g1);
        }
        acc0 = g0.fma(groupScale(data, scaleByte), acc0);
        acc1 = g1.fma(groupScale(data, scaleByte + 2), acc1);
      }
      out[r] = acc0.add(acc1).reduceLanes(VectorOperators.ADD);
    }
  }

  /** Activations {@code x[xBase, xBase + cols)} · Q8_0 row {@code r}. */
  private static float dotQ8(float[] x, int xBase, WeightMatrix w, MemorySegment data, int r) {
    int cols = w.cols();
    long rowByte = (long) r * cols;
    long scaleByte = w.scaleByte(r, 0);
    FloatVector acc0 = FloatVector.zero(F);
    FloatVector acc1 = FloatVector.zero(F);
    for (int c = 0; c < cols; c += WeightMatrix.Q8_CHUNK, scaleByte += 4) {
      FloatVector g0 = FloatVector.zero(F);
      FloatVector g1 = FloatVector.zero(F);
      for (int h = 0; h < 16; h += L) {
        IntVector v = IntVector.fromMemorySegment(I, data, rowByte + c + 4L * h, LE);
        int at = xBase + c + h;
        g0 = FloatVector.fromArray(F, x, at).fma(q8Values(v, 0), g0);
        g0 = FloatVector.fromArray(F, x, at + 16).fma(q8Values(v, 1), g0);
        g1 = FloatVector.fromArray(F, x, at + 32).fma(q8Values(v, 2), g1);
        g1 = FloatVector.fromArray(F, x, at + 48).fma(q8Values(v, 3), g1);
      }
      acc0 = g0.fma(groupScale(data, scaleByte), acc0);
      acc1 = g1.fma(groupScale(data, scaleByte + 2), acc1);
    }
    return acc0.add(acc1).reduceLanes(VectorOperators.ADD);
  }

  /** Byte {@code k} of each lane, sign-extended and converted. */
  private static FloatVector q8Values(IntVector v, int k) {
    IntVector low = k == 3 ? v : v.lanewise(VectorOperators.LSHL, 24 - 8 * k);
    return (FloatVector) low.lanewise(VectorOperators.ASHR, 24).convert(VectorOperators.I2F, 0);
  }

  /** The f16 scale at byte {@code at}, in every lane. */
  private static FloatVector groupScale(MemorySegment data, long at) {
    return FloatVector.broadcast(F, Float.float16ToFloat(data.get(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, at)));
  }

  /** Q8_0 row {@code r} dequantized into {@code row[offset, offset + cols)}, in column order. */
  private static void widenQ8Row(WeightMatrix w, int r, float[] row, int offset) {
    int cols = w.cols();
    MemorySegment data = w.data();
    long rowByte = (long) r * cols;
    long scaleByte = w.scaleByte(r, 0);
    for (int c = 0; c < cols; c += WeightMatrix.Q8_CHUNK, scaleByte += 4) {
      FloatVector s0 = groupScale(data, scaleByte);
      FloatVector s1 = groupScale(data, scaleByte + 2);
      for (int h = 0; h < 16; h += L) {
        IntVector v = IntVector.fromMemorySegment(I, data, rowByte + c + 4L * h, LE);
        int at = offset + c + h;
        q8Values(v, 0).mul(s0).intoArray(row, at);
        q8Values(v, 1).mul(s0).intoArray(row, at + 16);
        q8Values(v, 2).mul(s1).intoArray(row, at + 32);
        q8Values(v, 3).mul(s1).intoArray(row, at + 48);
      }
    }
  }

  // ---- Q4_0 weights ------------------------------------------------------------------------
  //
  // A Q4_0 row comes in interleaves of 128 values (WeightMatrix): an int load of L lanes holds, in
  // its eight nibbles, eight runs of L consecutive values (16 apart), each stored as q − 8 and taken
  // out signed by a left shift, an arithmetic right shift and a conversion — the instructions a
  // Q8_0 value costs, for half its bytes. Runs 2g and 2g + 1 make group g of the interleave; each
  // group is summed on its own and then scaled.

  /** Activations {@code x[xBase, xBase + cols)} · Q4_0 row {@code r}. */
  private static float dotQ4(float[] x, int xBase, WeightMatrix w, MemorySegment data, int r) {
    int cols = w.cols();
    long rowByte = (long) r * cols / 2;
    long scaleByte = w.scaleByte(r, 0);
    FloatVector acc0 = FloatVector.zero(F);
    FloatVector acc1 = FloatVector.zero(F);
    for (int c = 0; c < cols; c += WeightMatrix.Q4_CHUNK) {
      // Four runs (two groups) a pass: all eight in one body compiled to scalar code (5 against 19 GB/s).
      for (int k = 0; k < 8; k += 4, scaleByte += 4) {
        FloatVector g0 = FloatVector.zero(F);
        FloatVector g1 = FloatVector.zero(F);
        for (int h = 0; h < 16; h += L) {
          IntVector v = IntVector.fromMemorySegment(I, data, rowByte + c / 2 + 4L * h, LE);
          int at = xBase + c + 16 * k + h;
          g0 = FloatVector.fromArray(F, x, at).fma(q4Values(v, k), g0);
          g0 = FloatVector.fromArray(F, x, at + 16).fma(q4Values(v, k + 1), g0);
          g1 = FloatVector.fromArray(F, x, at + 32).fma(q4Values(v, k + 2), g1);
          g1 = FloatVector.fromArray(F, x, at + 48).fma(q4Values(v, k + 3), g1);
        }
        acc0 = g0.fma(groupScale(data, scaleByte), acc0);
        acc1 = g1.fma(groupScale(data, scaleByte + 2), acc1);
      }
    }
    return acc0.add(acc1).reduceLanes(VectorOperators.ADD);
  }

  /**
   * One token through Q4_0 rows longer than {@link #PACKED_ACTIVATION_MIN_COLS}, the activations
   * as {@link #interleavedActivationPairs} packs them: at half a weight byte a value, f32
   * activations would be eight bytes read per weight byte.
   */
  private static void packedQ4Rows(int[] pairs, WeightMatrix w, float[] out, int from, int to) {
    int cols = w.cols();
    MemorySegment data = w.data();
    for (int r = from; r < to; r++) {
      long rowByte = (long) r * cols / 2;
      long scaleByte = w.scaleByte(r, 0);
      FloatVector acc0 = FloatVector.zero(F);
      FloatVector acc1 = FloatVector.zero(F);
      for (int c = 0; c < cols; c += WeightMatrix.Q4_CHUNK) {
        for (int k = 0; k < 8; k += 4, scaleByte += 4) {
          FloatVector g0 = FloatVector.zero(F);
          FloatVector g1 = FloatVector.zero(F);
          for (int h = 0; h < 16; h += L) {
            IntVector v = IntVector.fromMemorySegment(I, data, rowByte + c / 2 + 4L * h, LE);
            IntVector runs01 = IntVector.fromArray(I, pairs, c / 2 + 8 * k + h); // runs k and k + 1
            IntVector runs23 = IntVector.fromArray(I, pairs, c / 2 + 8 * k + 16 + h); // runs k + 2 and k + 3
            g0 = bf16Low(runs01).fma(q4Values(v, k), g0);
            g0 = bf16High(runs01).fma(q4Values(v, k + 1), g0);
            g1 = bf16Low(runs23).fma(q4Values(v, k + 2), g1);
            g1 = bf16High(runs23).fma(q4Values(v, k + 3), g1);
          }
          acc0 = g0.fma(groupScale(data, scaleByte), acc0);
          acc1 = g1.fma(groupScale(data, scaleByte + 2), acc1);
        }
      }
      out[r] = acc0.add(acc1).reduceLanes(VectorOperators.ADD);
    }
  }

  /** Nibble {@code k} of each lane, sign-extended and converted. */
  private static FloatVector q4Values(IntVector v, int k) {
    return (FloatVector) v.lanewise(VectorOperators.LSHL, 28 - 4 * k).lanewise(VectorOperators.ASHR, 28).convert(VectorOperators.I2F, 0);
  }

  /** Q4_0 row {@code r} dequantized into {@code row[offset, offset + cols)}, in column order. */
  private static void widenQ4Row(WeightMatrix w, int r, float[] row, int offset) {
    int cols = w.cols();
    MemorySegment data = w.data();
    long rowByte = (long) r * cols / 2;
    long scaleByte = w.scaleByte(r, 0);
    for (int c = 0; c < cols; c += WeightMatrix.Q4_CHUNK, scaleByte += 8) {
      for (int k = 0; k < 8; k += 2) {
        FloatVector scale = groupScale(data, scaleByte + k);
        for (int h = 0; h < 16; h += L) {
          IntVector v = IntVector.fromMemorySegment(I, data, rowByte + c / 2 + 4L * h, LE);
          int at = offset + c + 16 * k + h;
          q4Values(v, k).mul(scale).intoArray(row, at);
          q4Values(v, k + 1).mul(scale).intoArray(row, at + 16);
        }
      }
    }
  }

  /** Dot product of permuted activations with a bf16 or f16 row. */
  private static float dotHalves(float[] x, int xBase, WeightMatrix w, MemorySegment data, int r, int cols, boolean fromMemory) {
    long rowByte = (long) r * cols * 2;
    int upper = (cols / (2 * L)) * 2 * L;
    float sum = fromMemory
        ? dotHalfPairsTouchingAhead(x, xBase, data, rowByte, upper, w.dtype() == DType.BF16)
        : dotHalfPairs(x, xBase, data, rowByte, upper, w.dtype() == DType.BF16);
    for (int i = upper; i < cols; i++) {
      sum += x[xBase + i] * w.get(r, i);
    }
    return sum;
  }

  /**
   * Permuted {@code x[xOff, xOff + upper)} · the {@code upper} (a multiple of 2L) bf16 or f16
   * values at byte {@code from} of {@code data}, read two to an int.
   */
  private static float dotHalfPairs(float[] x, int xOff, MemorySegment data, long from, int upper, boolean bf16) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    for (int i = 0; i < upper; i += 2 * L) {
      IntVector pair = IntVector.fromMemorySegment(I, data, from + i * 2L, LE);
      a0 = FloatVector.fromArray(F, x, xOff + i).fma(evenHalves(pair, bf16), a0);
      a1 = FloatVector.fromArray(F, x, xOff + i + L).fma(oddHalves(pair, bf16), a1);
    }
    return a0.add(a1).reduceLanes(VectorOperators.ADD);
  }

  /**
   * {@link #dotHalfPairs} for weights read from memory: each pass also loads one int {@link
   * #TOUCH_AHEAD} bytes further on (up to the segment's end). The loads' values are folded into the
   * result where they cannot change it (a sum plus the smallest subnormal, only when their xor
   * takes one particular value), so the compiler keeps them.
   */
  private static float dotHalfPairsTouchingAhead(float[] x, int xOff, MemorySegment data, long from, int upper, boolean bf16) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    long last = data.byteSize() - Integer.BYTES;
    int touched = 0;
    for (int i = 0; i < upper; i += 2 * L) {
      touched ^= data.get(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, Math.min(from + i * 2L + TOUCH_AHEAD, last));
      IntVector pair = IntVector.fromMemorySegment(I, data, from + i * 2L, LE);
      a0 = FloatVector.fromArray(F, x, xOff + i).fma(evenHalves(pair, bf16), a0);
      a1 = FloatVector.fromArray(F, x, xOff + i + L).fma(oddHalves(pair, bf16), a1);
    }
    return a0.add(a1).reduceLanes(VectorOperators.ADD) + (touched == 0x7fc0_0001 ? Float.MIN_VALUE : 0f);
  }

  /**
   * Many tokens: per tile of tokens, widen two weight rows at a time into scratch (in the permuted
   * order of the activations), then a 4-token × 2-row block of dot products per pass: six loads
   * feed eight FMAs, and the tile's activations stay in cache while the weights stream once per
   * tile.
   */
  private void matmulRows(float[] x, int tokens, WeightMatrix w, float[] out, int from, int to) {
    int cols = w.cols();
    int rows = w.rows();
    float[] scratch = rowScratch.get();
    if (scratch.length < 4 * cols) {
      scratch = new float[4 * cols];
      rowScratch.set(scratch);
    }
    float[] row = scratch;
    for (int tile = 0; tile < tokens; tile += TOKEN_TILE) {
      int tileEnd = Math.min(tokens, tile + TOKEN_TILE);
      int r = from;
      for (; r + 4 <= to; r += 4) {
        for (int k = 0; k < 4; k++) {
          widenRow(w, r + k, row, k * cols);
        }
        int t = tile;
        for (; t + 4 <= tileEnd; t += 4) {
          block4x4(x, t, cols, row, 0, out, rows, r);
        }
        // Two or three tokens left (a step verifying proposed tokens, a small batch): two against all four rows at once.
        if (t + 2 <= tileEnd) {
          block2x4(x, t, cols, row, out, rows, r);
          t += 2;
        }
        for (; t < tileEnd; t++) {
          for (int k = 0; k < 4; k++) {
            out[t * rows + r + k] = dot(x, t * cols, row, k * cols, cols);
          }
        }
      }
      for (; r + 2 <= to; r += 2) {
        widenRow(w, r, row, 0);
        widenRow(w, r + 1, row, cols);
        int t = tile;
        for (; t + 4 <= tileEnd; t += 4) {
          block4x2(x, t, cols, row, 0, out, rows, r);
        }
        for (; t < tileEnd; t++) {
          out[t * rows + r] = dot(x, t * cols, row, 0, cols);
          out[t * rows + r + 1] = dot(x, t * cols, row, cols, cols);
        }
      }
      for (; r < to; r++) {
        widenRow(w, r, row, 0);
        for (int t = tile; t < tileEnd; t++) {
          out[t * rows + r] = dot(x, t * cols, row, 0, cols);
        }
      }
    }
  }

  // ---- outer-product matmul (many tokens) ----------------------------------------------------
  //
  // Rows r0..r0+PANEL of the weights are widened once into a panel laid out by column: the PANEL
  // weights of column k are two vectors at panel[k·PANEL]. A micro-tile of WIDE_MICRO_TOKENS
  // tokens (10 on AVX-512, else 6) then loads those two vectors once per column and multiplies them
  // by each token's activation broadcast to every lane: 2 loads and 10 broadcasts feed 20 FMAs
  // (on AVX2, 2 and 6 feed 12), and the sums land as whole
  // vectors in the output rows (no reduction across lanes, unlike a dot product). Columns go in
  // slices of K_SLICE so that the panel's slice stays in L1 while every token passes over it.
  // The activations arrive in the same column order as the widened rows (permuted for 16-bit
  // weights), so the sums are those of the natural order, added in another order.

  /**
   * Panels {@code [from, to)} (numbered across the matrices) for every token: each packed once, then
   * per tile of tokens (whose activations stay in L2 across the panels) each panel slice by slice.
   */
  private void panelProducts(float[] x, int tokens, WeightMatrix[] ws, float[][] outs, int[] firstPanel, int from, int to) {
    int cols = ws[0].cols();
    int size = cols * PANEL;
    float[] panels = panelScratch.get();
    if (panels.length < (to - from) * size) {
      panels = new float[(to - from) * size];
      panelScratch.set(panels);
    }
    for (int p = from; p < to; p++) {
      int m = matrixOf(firstPanel, p);
      int r0 = (p - firstPanel[m]) * PANEL;
      packPanel(ws[m], r0, Math.min(PANEL, ws[m].rows() - r0), panels, (p - from) * size);
    }
    // Tokens per tile: their activations (tile × cols floats) about 384 KiB, a multiple of the micro-tile.
    int tile = Math.max(WIDE_MICRO_TOKENS, Math.min(256, 98_304 / cols) / WIDE_MICRO_TOKENS * WIDE_MICRO_TOKENS);
    float[] partial = tileScratch.get();
    if (partial.length < tile * PANEL) {
      partial = new float[tile * PANEL];
      tileScratch.set(partial);
    }
    for (int t0 = 0; t0 < tokens; t0 += tile) {
      int t1 = Math.min(tokens, t0 + tile);
      for (int p = from; p < to; p++) {
        int m = matrixOf(firstPanel, p);
        int r0 = (p - firstPanel[m]) * PANEL;
        int rows = ws[m].rows();
        int valid = Math.min(PANEL, rows - r0);
        // A whole panel sums straight into the output rows; the matrix's last, partial one into
        // scratch (PANEL floats a token), copied out after its last slice.
        boolean whole = valid == PANEL;
        float[] dst = whole ? outs[m] : partial;
        int stride = whole ? rows : PANEL;
        int base = (p - from) * size;
        for (int k0 = 0; k0 < cols; k0 += K_SLICE) {
          int k1 = Math.min(cols, k0 + K_SLICE);
          boolean first = k0 == 0;
          microTiles(x, cols, t0, t1 - t0, panels, base, k0, k1, dst, whole ? t0 * rows + r0 : 0, stride, first);
        }
        if (!whole) {
          for (int t = t0; t < t1; t++) {
            System.arraycopy(partial, (t - t0) * PANEL, outs[m], t * rows + r0, valid);
          }
        }
      }
    }
  }

  /** The matrix panel {@code p} belongs to. */
  private static int matrixOf(int[] firstPanel, int p) {
    int m = 0;
    while (p >= firstPanel[m + 1]) {
      m++;
    }
    return m;
  }

  /** Rows r0..r0+valid widened into {@code panels[at, at + cols·PANEL)}, column by column; rows past {@code valid} are zero. */
  private void packPanel(WeightMatrix w, int r0, int valid, float[] panels, int at) {
    int cols = w.cols();
    float[] row = rowScratch.get();
    if (row.length < cols) {
      row = new float[4 * cols];
      rowScratch.set(row);
    }
    for (int j = 0; j < valid; j++) {
      widenRow(w, r0 + j, row, 0);
      for (int k = 0, i = at + j; k < cols; k++, i += PANEL) {
        panels[i] = row[k];
      }
    }
    for (int j = valid; j < PANEL; j++) {
      for (int k = 0, i = at + j; k < cols; k++, i += PANEL) {
        panels[i] = 0f;
      }
    }
  }

  /**
   * Tokens {@code [t, t + count)} through the widest micro-tiles that fit — ten (AVX-512), six, then
   * one at a time — token {@code t + i}'s sums at {@code dst[at + i·stride, … + 2L)}.
   */
  private static void microTiles(float[] x, int cols, int t, int count, float[] panel, int base, int k0, int k1, float[] dst, int at,
      int stride, boolean first) {
    int i = 0;
    if (WIDE_MICRO_TOKENS == 10) {
      for (; i + 10 <= count; i += 10) {
        microTile10(x, cols, t + i, panel, base, k0, k1, dst, at + i * stride, stride, first);
      }
    }
    for (; i + MICRO_TOKENS <= count; i += MICRO_TOKENS) {
      microTile6(x, cols, t + i, panel, base, k0, k1, dst, at + i * stride, stride, first);
    }
    for (; i < count; i++) {
      microTile1(x, cols, t + i, panel, base, k0, k1, dst, at + i * stride, first);
    }
  }

  /**
   * Tokens t..t+5 (rows of {@code x}, {@code cols} apart) over columns [k0, k1) of the panel at
   * {@code panel[base]} (column k's 2L values at {@code panel[base + k·PANEL]}), summed into {@code
   * dst[at + i·stride, … + 2L)} for token t+i: added to what earlier slices left there unless
   * {@code first}. Attention uses it too: queries × transposed keys, weights × values. (No masks here: C1 runs out of virtual registers on this method with them, and
   * the method then never reaches C2.)
   */
  private static void microTile6(float[] x, int cols, int t, float[] panel, int base, int k0, int k1, float[] dst, int at, int stride,
      boolean first) {
    int o0 = at;
    int o1 = o0 + stride;
    int o2 = o1 + stride;
    int o3 = o2 + stride;
    int o4 = o3 + stride;
    int o5 = o4 + stride;
    FloatVector a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51;
    if (first) {
      a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = a40 = a41 = a50 = a51 = FloatVector.zero(F);
    } else {
      a00 = FloatVector.fromArray(F, dst, o0);
      a01 = FloatVector.fromArray(F, dst, o0 + L);
      a10 = FloatVector.fromArray(F, dst, o1);
      a11 = FloatVector.fromArray(F, dst, o1 + L);
      a20 = FloatVector.fromArray(F, dst, o2);
      a21 = FloatVector.fromArray(F, dst, o2 + L);
      a30 = FloatVector.fromArray(F, dst, o3);
      a31 = FloatVector.fromArray(F, dst, o3 + L);
      a40 = FloatVector.fromArray(F, dst, o4);
      a41 = FloatVector.fromArray(F, dst, o4 + L);
      a50 = FloatVector.fromArray(F, dst, o5);
      a51 = FloatVector.fromArray(F, dst, o5 + L);
    }
    int x0 = t * cols;
    int x1 = x0 + cols;
    int x2 = x1 + cols;
    int x3 = x2 + cols;
    int x4 = x3 + cols;
    int x5 = x4 + cols;
    for (int k = k0; k < k1; k++) {
      int w = base + k * PANEL;
      FloatVector w0 = FloatVector.fromArray(F, panel, w);
      FloatVector w1 = FloatVector.fromArray(F, panel, w + L);
      FloatVector b = FloatVector.broadcast(F, x[x0 + k]);
      a00 = b.fma(w0, a00);
      a01 = b.fma(w1, a01);
      b = FloatVector.broadcast(F, x[x1 + k]);
      a10 = b.fma(w0, a10);
      a11 = b.fma(w1, a11);
      b = FloatVector.broadcast(F, x[x2 + k]);
      a20 = b.fma(w0, a20);
      a21 = b.fma(w1, a21);
      b = FloatVector.broadcast(F, x[x3 + k]);
      a30 = b.fma(w0, a30);
      a31 = b.fma(w1, a31);
      b = FloatVector.broadcast(F, x[x4 + k]);
      a40 = b.fma(w0, a40);
      a41 = b.fma(w1, a41);
      b = FloatVector.broadcast(F, x[x5 + k]);
      a50 = b.fma(w0, a50);
      a51 = b.fma(w1, a51);
    }
    // Each accumulator written out by name: an array of vectors would box them all.
    a00.intoArray(dst, o0);
    a01.intoArray(dst, o0 + L);
    a10.intoArray(dst, o1);
    a11.intoArray(dst, o1 + L);
    a20.intoArray(dst, o2);
    a21.intoArray(dst, o2 + L);
    a30.intoArray(dst, o3);
    a31.intoArray(dst, o3 + L);
    a40.intoArray(dst, o4);
    a41.intoArray(dst, o4 + L);
    a50.intoArray(dst, o5);
    a51.intoArray(dst, o5 + L);
  }

  /**
   * As {@link #microTile6} for tokens t..t+9: 20 accumulators, two weight vectors and a broadcast
   * fill 23 of AVX-512's 32 vector registers, and each pair of weight loads feeds 20 FMAs instead of
   * 12 (1.3× the six-token tile's rate in cache on AVX-512). Only where vectors are 512 bits: with
   * 16 registers it would spill.
   */
  private static void microTile10(float[] x, int cols, int t, float[] panel, int base, int k0, int k1, float[] dst, int at, int stride,
      boolean first) {
    int o0 = at;
    int o1 = o0 + stride;
    int o2 = o1 + stride;
    int o3 = o2 + stride;
    int o4 = o3 + stride;
    int o5 = o4 + stride;
    int o6 = o5 + stride;
    int o7 = o6 + stride;
    int o8 = o7 + stride;
    int o9 = o8 + stride;
    FloatVector a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51, a60, a61, a70, a71, a80, a81, a90, a91;
    if (first) {
      a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = a40 = a41 = a50 = a51 = a60 = a61 = a70 = a71 = a80 = a81 = a90 = a91 = FloatVector.zero(F);
    } else {
      a00 = FloatVector.fromArray(F, dst, o0);
      a01 = FloatVector.fromArray(F, dst, o0 + L);
      a10 = FloatVector.fromArray(F, dst, o1);
      a11 = FloatVector.fromArray(F, dst, o1 + L);
      a20 = FloatVector.fromArray(F, dst, o2);
      a21 = FloatVector.fromArray(F, dst, o2 + L);
      a30 = FloatVector.fromArray(F, dst, o3);
      a31 = FloatVector.fromArray(F, dst, o3 + L);
      a40 = FloatVector.fromArray(F, dst, o4);
      a41 = FloatVector.fromArray(F, dst, o4 + L);
      a50 = FloatVector.fromArray(F, dst, o5);
      a51 = FloatVector.fromArray(F, dst, o5 + L);
      a60 = FloatVector.fromArray(F, dst, o6);
      a61 = FloatVector.fromArray(F, dst, o6 + L);
      a70 = FloatVector.fromArray(F, dst, o7);
      a71 = FloatVector.fromArray(F, dst, o7 + L);
      a80 = FloatVector.fromArray(F, dst, o8);
      a81 = FloatVector.fromArray(F, dst, o8 + L);
      a90 = FloatVector.fromArray(F, dst, o9);
      a91 = FloatVector.fromArray(F, dst, o9 + L);
    }
    int x0 = t * cols;
    int x1 = x0 + cols;
    int x2 = x1 + cols;
    int x3 = x2 + cols;
    int x4 = x3 + cols;
    int x5 = x4 + cols;
    int x6 = x5 + cols;
    int x7 = x6 + cols;
    int x8 = x7 + cols;
    int x9 = x8 + cols;
    for (int k = k0; k < k1; k++) {
      int w = base + k * PANEL;
      FloatVector w0 = FloatVector.fromArray(F, panel, w);
      FloatVector w1 = FloatVector.fromArray(F, panel, w + L);
      FloatVector b = FloatVector.broadcast(F, x[x0 + k]);
      a00 = b.fma(w0, a00);
      a01 = b.fma(w1, a01);
      b = FloatVector.broadcast(F, x[x1 + k]);
      a10 = b.fma(w0, a10);
      a11 = b.fma(w1, a11);
      b = FloatVector.broadcast(F, x[x2 + k]);
      a20 = b.fma(w0, a20);
      a21 = b.fma(w1, a21);
      b = FloatVector.broadcast(F, x[x3 + k]);
      a30 = b.fma(w0, a30);
      a31 = b.fma(w1, a31);
      b = FloatVector.broadcast(F, x[x4 + k]);
      a40 = b.fma(w0, a40);
      a41 = b.fma(w1, a41);
      b = FloatVector.broadcast(F, x[x5 + k]);
      a50 = b.fma(w0, a50);
      a51 = b.fma(w1, a51);
      b = FloatVector.broadcast(F, x[x6 + k]);
      a60 = b.fma(w0, a60);
      a61 = b.fma(w1, a61);
      b = FloatVector.broadcast(F, x[x7 + k]);
      a70 = b.fma(w0, a70);
      a71 = b.fma(w1, a71);
      b = FloatVector.broadcast(F, x[x8 + k]);
      a80 = b.fma(w0, a80);
      a81 = b.fma(w1, a81);
      b = FloatVector.broadcast(F, x[x9 + k]);
      a90 = b.fma(w0, a90);
      a91 = b.fma(w1, a91);
    }
    a00.intoArray(dst, o0);
    a01.intoArray(dst, o0 + L);
    a10.intoArray(dst, o1);
    a11.intoArray(dst, o1 + L);
    a20.intoArray(dst, o2);
    a21.intoArray(dst, o2 + L);
    a30.intoArray(dst, o3);
    a31.intoArray(dst, o3 + L);
    a40.intoArray(dst, o4);
    a41.intoArray(dst, o4 + L);
    a50.intoArray(dst, o5);
    a51.intoArray(dst, o5 + L);
    a60.intoArray(dst, o6);
    a61.intoArray(dst, o6 + L);
    a70.intoArray(dst, o7);
    a71.intoArray(dst, o7 + L);
    a80.intoArray(dst, o8);
    a81.intoArray(dst, o8 + L);
    a90.intoArray(dst, o9);
    a91.intoArray(dst, o9 + L);
  }

  /** One token over columns [k0, k1) of the panel into {@code dst[at, at + 2L)}: the tail of a tile that is not a multiple of MICRO_TOKENS. */
  private static void microTile1(float[] x, int cols, int t, float[] panel, int base, int k0, int k1, float[] dst, int at, boolean first) {
    FloatVector a0 = first ? FloatVector.zero(F) : FloatVector.fromArray(F, dst, at);
    FloatVector a1 = first ? FloatVector.zero(F) : FloatVector.fromArray(F, dst, at + L);
    int xb = t * cols;
    for (int k = k0; k < k1; k++) {
      FloatVector b = FloatVector.broadcast(F, x[xb + k]);
      a0 = b.fma(FloatVector.fromArray(F, panel, base + k * PANEL), a0);
      a1 = b.fma(FloatVector.fromArray(F, panel, base + k * PANEL + L), a1);
    }
    a0.intoArray(dst, at);
    a1.intoArray(dst, at + L);
  }

  /**
   * Tokens t..t+3 against rows r..r+3 (widened at row[rowBase + k·cols..rowBase + (k+1)·cols)):
   * eight loads feed sixteen FMAs a pass, twice block4x2's FMAs per load.
   */
  private static void block4x4(float[] x, int t, int cols, float[] row, int rowBase, float[] out, int rows, int r) {
    int upper = F.loopBound(cols);
    int b0 = t * cols;
    int b1 = b0 + cols;
    int b2 = b1 + cols;
    int b3 = b2 + cols;
    FloatVector a00 = FloatVector.zero(F), a01 = FloatVector.zero(F), a02 = FloatVector.zero(F), a03 = FloatVector.zero(F);
    FloatVector a10 = FloatVector.zero(F), a11 = FloatVector.zero(F), a12 = FloatVector.zero(F), a13 = FloatVector.zero(F);
    FloatVector a20 = FloatVector.zero(F), a21 = FloatVector.zero(F), a22 = FloatVector.zero(F), a23 = FloatVector.zero(F);
    FloatVector a30 = FloatVector.zero(F), a31 = FloatVector.zero(F), a32 = FloatVector.zero(F), a33 = FloatVector.zero(F);
    int c1 = rowBase + cols;
    int c2 = rowBase + 2 * cols;
    int c3 = rowBase + 3 * cols;
    int i = 0;
    for (; i < upper; i += L) {
      FloatVector w0 = FloatVector.fromArray(F, row, rowBase + i);
      FloatVector w1 = FloatVector.fromArray(F, row, c1 + i);
      FloatVector w2 = FloatVector.fromArray(F, row, c2 + i);
      FloatVector w3 = FloatVector.fromArray(F, row, c3 + i);
      FloatVector x0 = FloatVector.fromArray(F, x, b0 + i);
      a00 = x0.fma(w0, a00);
      a01 = x0.fma(w1, a01);
      a02 = x0.fma(w2, a02);
      a03 = x0.fma(w3, a03);
      FloatVector x1 = FloatVector.fromArray(F, x, b1 + i);
      a10 = x1.fma(w0, a10);
      a11 = x1.fma(w1, a11);
      a12 = x1.fma(w2, a12);
      a13 = x1.fma(w3, a13);
      FloatVector x2 = FloatVector.fromArray(F, x, b2 + i);
      a20 = x2.fma(w0, a20);
      a21 = x2.fma(w1, a21);
      a22 = x2.fma(w2, a22);
      a23 = x2.fma(w3, a23);
      FloatVector x3 = FloatVector.fromArray(F, x, b3 + i);
      a30 = x3.fma(w0, a30);
      a31 = x3.fma(w1, a31);
      a32 = x3.fma(w2, a32);
      a33 = x3.fma(w3, a33);
    }
    // Each accumulator written out by name: an array of vectors would box them all.
    finish(a00, x, b0, row, rowBase, i, cols, out, t * rows + r);
    finish(a01, x, b0, row, c1, i, cols, out, t * rows + r + 1);
    finish(a02, x, b0, row, c2, i, cols, out, t * rows + r + 2);
    finish(a03, x, b0, row, c3, i, cols, out, t * rows + r + 3);
    finish(a10, x, b1, row, rowBase, i, cols, out, (t + 1) * rows + r);
    finish(a11, x, b1, row, c1, i, cols, out, (t + 1) * rows + r + 1);
    finish(a12, x, b1, row, c2, i, cols, out, (t + 1) * rows + r + 2);
    finish(a13, x, b1, row, c3, i, cols, out, (t + 1) * rows + r + 3);
    finish(a20, x, b2, row, rowBase, i, cols, out, (t + 2) * rows + r);
    finish(a21, x, b2, row, c1, i, cols, out, (t + 2) * rows + r + 1);
    finish(a22, x, b2, row, c2, i, cols, out, (t + 2) * rows + r + 2);
    finish(a23, x, b2, row, c3, i, cols, out, (t + 2) * rows + r + 3);
    finish(a30, x, b3, row, rowBase, i, cols, out, (t + 3) * rows + r);
    finish(a31, x, b3, row, c1, i, cols, out, (t + 3) * rows + r + 1);
    finish(a32, x, b3, row, c2, i, cols, out, (t + 3) * rows + r + 2);
    finish(a33, x, b3, row, c3, i, cols, out, (t + 3) * rows + r + 3);
  }

  /** Tokens t, t+1 against rows r..r+3: six loads feed eight FMAs a pass (two dot products, four loads for two). */
  private static void block2x4(float[] x, int t, int cols, float[] row, float[] out, int rows, int r) {
    int upper = F.loopBound(cols);
    int b0 = t * cols;
    int b1 = b0 + cols;
    FloatVector a00 = FloatVector.zero(F), a01 = FloatVector.zero(F), a02 = FloatVector.zero(F), a03 = FloatVector.zero(F);
    FloatVector a10 = FloatVector.zero(F), a11 = FloatVector.zero(F), a12 = FloatVector.zero(F), a13 = FloatVector.zero(F);
    int c2 = 2 * cols;
    int c3 = 3 * cols;
    int i = 0;
    for (; i < upper; i += L) {
      FloatVector w0 = FloatVector.fromArray(F, row, i);
      FloatVector w1 = FloatVector.fromArray(F, row, cols + i);
      FloatVector w2 = FloatVector.fromArray(F, row, c2 + i);
      FloatVector w3 = FloatVector.fromArray(F, row, c3 + i);
      FloatVector x0 = FloatVector.fromArray(F, x, b0 + i);
      a00 = x0.fma(w0, a00);
      a01 = x0.fma(w1, a01);
      a02 = x0.fma(w2, a02);
      a03 = x0.fma(w3, a03);
      FloatVector x1 = FloatVector.fromArray(F, x, b1 + i);
      a10 = x1.fma(w0, a10);
      a11 = x1.fma(w1, a11);
      a12 = x1.fma(w2, a12);
      a13 = x1.fma(w3, a13);
    }
    finish(a00, x, b0, row, 0, i, cols, out, t * rows + r);
    finish(a01, x, b0, row, cols, i, cols, out, t * rows + r + 1);
    finish(a02, x, b0, row, c2, i, cols, out, t * rows + r + 2);
    finish(a03, x, b0, row, c3, i, cols, out, t * rows + r + 3);
    finish(a10, x, b1, row, 0, i, cols, out, (t + 1) * rows + r);
    finish(a11, x, b1, row, cols, i, cols, out, (t + 1) * rows + r + 1);
    finish(a12, x, b1, row, c2, i, cols, out, (t + 1) * rows + r + 2);
    finish(a13, x, b1, row, c3, i, cols, out, (t + 1) * rows + r + 3);
  }

  /** One dot product's end: the accumulator's lanes plus the scalar tail from column {@code from}. */
  private static void finish(FloatVector acc, float[] x, int xBase, float[] row, int rowBase, int from, int cols, float[] out, int at) {
    float sum = acc.reduceLanes(VectorOperators.ADD);
    for (int j = from; j < cols; j++) {
      sum += x[xBase + j] * row[rowBase + j];
    }
    out[at] = sum;
  }

  /** Tokens t..t+3 against rows r and r+1 (widened at row[rowBase..rowBase + cols) and the next cols). */
  private static void block4x2(float[] x, int t, int cols, float[] row, int rowBase, float[] out, int rows, int r) {
    int upper = F.loopBound(cols);
    int b0 = t * cols;
    int b1 = b0 + cols;
    int b2 = b1 + cols;
    int b3 = b2 + cols;
    int c1 = rowBase + cols;
    FloatVector a00 = FloatVector.zero(F), a01 = FloatVector.zero(F);
    FloatVector a10 = FloatVector.zero(F), a11 = FloatVector.zero(F);
    FloatVector a20 = FloatVector.zero(F), a21 = FloatVector.zero(F);
    FloatVector a30 = FloatVector.zero(F), a31 = FloatVector.zero(F);
    int i = 0;
    for (; i < upper; i += L) {
      FloatVector w0 = FloatVector.fromArray(F, row, rowBase + i);
      FloatVector w1 = FloatVector.fromArray(F, row, c1 + i);
      FloatVector x0 = FloatVector.fromArray(F, x, b0 + i);
      a00 = x0.fma(w0, a00);
      a01 = x0.fma(w1, a01);
      FloatVector x1 = FloatVector.fromArray(F, x, b1 + i);
      a10 = x1.fma(w0, a10);
      a11 = x1.fma(w1, a11);
      FloatVector x2 = FloatVector.fromArray(F, x, b2 + i);
      a20 = x2.fma(w0, a20);
      a21 = x2.fma(w1, a21);
      FloatVector x3 = FloatVector.fromArray(F, x, b3 + i);
      a30 = x3.fma(w0, a30);
      a31 = x3.fma(w1, a31);
    }
    float s00 = a00.reduceLanes(VectorOperators.ADD), s01 = a01.reduceLanes(VectorOperators.ADD);
    float s10 = a10.reduceLanes(VectorOperators.ADD), s11 = a11.reduceLanes(VectorOperators.ADD);
    float s20 = a20.reduceLanes(VectorOperators.ADD), s21 = a21.reduceLanes(VectorOperators.ADD);
    float s30 = a30.reduceLanes(VectorOperators.ADD), s31 = a31.reduceLanes(VectorOperators.ADD);
    for (; i < cols; i++) {
      float w0 = row[rowBase + i];
      float w1 = row[c1 + i];
      s00 += x[b0 + i] * w0;
      s01 += x[b0 + i] * w1;
      s10 += x[b1 + i] * w0;
      s11 += x[b1 + i] * w1;
      s20 += x[b2 + i] * w0;
      s21 += x[b2 + i] * w1;
      s30 += x[b3 + i] * w0;
      s31 += x[b3 + i] * w1;
    }
    out[t * rows + r] = s00;
    out[t * rows + r + 1] = s01;
    out[(t + 1) * rows + r] = s10;
    out[(t + 1) * rows + r + 1] = s11;
    out[(t + 2) * rows + r] = s20;
    out[(t + 2) * rows + r + 1] = s21;
    out[(t + 3) * rows + r] = s30;
    out[(t + 3) * rows + r + 1] = s31;
  }

  /**
   * Row r as f32 into {@code row[offset, offset + cols)}, 16-bit types in the permuted order (even
   * columns, then odd, per 2L block), f32 and the quantized types in column order.
   */
  private static void widenRow(WeightMatrix w, int r, float[] row, int offset) {
    int cols = w.cols();
    MemorySegment data = w.data();
    if (w.dtype() == DType.F32) {
      MemorySegment.copy(data, java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, (long) r * cols * 4, row, offset, cols);
      return;
    }
    if (w.dtype() == DType.Q8_0) {
      widenQ8Row(w, r, row, offset);
      return;
    }
    if (w.dtype() == DType.Q4_0) {
      widenQ4Row(w, r, row, offset);
      return;
    }
    int upper = (cols / (2 * L)) * 2 * L;
    widenHalfPairs(data, (long) r * cols * 2, upper, w.dtype() == DType.BF16, row, offset);
    for (int i = upper; i < cols; i++) {
      row[offset + i] = w.get(r, i);
    }
  }

  /**
   * The {@code upper} (a multiple of 2L) bf16 or f16 values at byte {@code from} of {@code data}
   * as f32 into {@code out[at, at + upper)}, permuted per 2L block (even elements, then odd).
   */
  private static void widenHalfPairs(MemorySegment data, long from, int upper, boolean bf16, float[] out, int at) {
    for (int i = 0; i < upper; i += 2 * L) {
      IntVector pair = IntVector.fromMemorySegment(I, data, from + i * 2L, LE);
      evenHalves(pair, bf16).intoArray(out, at + i);
      oddHalves(pair, bf16).intoArray(out, at + i + L);
    }
  }

  /** The 16-bit values in the low halves of the ints (the even elements), widened. */
  private static FloatVector evenHalves(IntVector pair, boolean bf16) {
    return bf16 ? bf16Low(pair) : f16(pair.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16));
  }

  /** The 16-bit values in the high halves of the ints (the odd elements), widened. */
  private static FloatVector oddHalves(IntVector pair, boolean bf16) {
    return bf16 ? bf16High(pair) : f16(pair.lanewise(VectorOperators.ASHR, 16));
  }

  /** bf16 is the top half of an f32: the low 16 bits of each int moved up. */
  private static FloatVector bf16Low(IntVector pair) {
    return pair.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
  }

  /** The high 16 bits of each int are already in place. */
  private static FloatVector bf16High(IntVector pair) {
    return pair.and(0xffff0000).reinterpretAsFloats();
  }

  /**
   * f16 (sign-extended in an int) → f32: move exponent and mantissa up 13 bits and rescale by
   * 2^112 (which also turns subnormals into normals); infinities and NaNs keep an all-ones
   * exponent; then the sign.
   */
  private static FloatVector f16(IntVector h) {
    IntVector magnitude = h.and(0x7fff).lanewise(VectorOperators.LSHL, 13);
    FloatVector value = magnitude.reinterpretAsFloats().mul(0x1p112f);
    VectorMask<Integer> special = h.and(0x7c00).eq(0x7c00);
    IntVector bits = value.reinterpretAsInts().blend(magnitude.or(0x7f800000), special);
    return bits.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
  }

  /**
   * Rows split over the compute threads where they hold enough work (a prefill chunk's), else on
   * the calling thread: a decode step's few rows are a few thousand multiply-adds a projection,
   * less than waking the helpers costs. Four consecutive rows (one sequence's) go through the
   * matmul's 4×4 and 4×2 blocks for {@code A·x} and share each load of B; other rows go one at a
   * time.
   */
  @Override
  public void addLowRank(float[] in, int inDim, int[] rows, float[] ab, int aAt, int bAt, int rank, float[] out, int outDim) {
    int grain = Math.max(1, (1 << 16) / Math.max(1, rank * (inDim + outDim)));
    int last = 0;
    for (int t : rows) {
      last = Math.max(last, t);
    }
    float[] mid = lowRankScratch((last + 1) * rank); // row t's A·x at [t·rank, (t + 1)·rank): each thread writes its own rows
    runner.forRange(rows.length, grain, (from, to) -> {
      int j = from;
      while (j < to) {
        int t = rows[j];
        if (j + 4 <= to && rows[j + 1] == t + 1 && rows[j + 2] == t + 2 && rows[j + 3] == t + 3) {
          reduceRows4(in, t, inDim, ab, aAt, rank, mid);
          expandRank4(mid, ab, bAt, rank, out, t, outDim);
          j += 4;
        } else {
          reduceRank(in, t * inDim, inDim, ab, aAt, rank, mid, t * rank);
          expandRank(mid, t * rank, ab, bAt, rank, out, t * outDim, outDim, 0);
          j++;
        }
      }
    });
  }

  private float[] lowRankMid = new float[0]; // addLowRank's A·x, grown as needed (calls come from the engine's thread)

  private float[] lowRankScratch(int floats) {
    if (lowRankMid.length < floats) {
      lowRankMid = new float[floats];
    }
    return lowRankMid;
  }

  /** {@code mid[(t + i)·rank + k] = A[k] · x_{t+i}} for rows t..t+3 (A's rows from {@code aAt}), by the matmul's blocks of four (then two) rows of A. */
  private static void reduceRows4(float[] x, int t, int n, float[] aRows, int aAt, int rank, float[] mid) {
    int k = 0;
    for (; k + 4 <= rank; k += 4) {
      block4x4(x, t, n, aRows, aAt + k * n, mid, rank, k);
    }
    for (; k + 2 <= rank; k += 2) {
      block4x2(x, t, n, aRows, aAt + k * n, mid, rank, k);
    }
    for (; k < rank; k++) {
      for (int i = 0; i < 4; i++) {
        mid[(t + i) * rank + k] = dot(aRows, aAt + k * n, x, (t + i) * n, n);
      }
    }
  }

  /** Rows t..t+3 of y each {@code += Σ_k mid[row·rank + k] · B[k]} (B's columns from {@code bAt}): each vector of B loaded once for the four. */
  private static void expandRank4(float[] mid, float[] bColumns, int bAt, int rank, float[] y, int t, int n) {
    int y0 = t * n;
    int y1 = y0 + n;
    int y2 = y1 + n;
    int y3 = y2 + n;
    int z0 = t * rank; // row t's A·x in mid, then the next three rows'
    int z1 = z0 + rank;
    int z2 = z1 + rank;
    int z3 = z2 + rank;
    int upper = F.loopBound(n);
    int o = 0;
    for (; o + 4 * L <= upper; o += 4 * L) { // four rows by four vectors: sixteen sums, eight loads a step of k
      FloatVector c00 = FloatVector.fromArray(F, y, y0 + o), c01 = FloatVector.fromArray(F, y, y0 + o + L);
      FloatVector c02 = FloatVector.fromArray(F, y, y0 + o + 2 * L), c03 = FloatVector.fromArray(F, y, y0 + o + 3 * L);
      FloatVector c10 = FloatVector.fromArray(F, y, y1 + o), c11 = FloatVector.fromArray(F, y, y1 + o + L);
      FloatVector c12 = FloatVector.fromArray(F, y, y1 + o + 2 * L), c13 = FloatVector.fromArray(F, y, y1 + o + 3 * L);
      FloatVector c20 = FloatVector.fromArray(F, y, y2 + o), c21 = FloatVector.fromArray(F, y, y2 + o + L);
      FloatVector c22 = FloatVector.fromArray(F, y, y2 + o + 2 * L), c23 = FloatVector.fromArray(F, y, y2 + o + 3 * L);
      FloatVector c30 = FloatVector.fromArray(F, y, y3 + o), c31 = FloatVector.fromArray(F, y, y3 + o + L);
      FloatVector c32 = FloatVector.fromArray(F, y, y3 + o + 2 * L), c33 = FloatVector.fromArray(F, y, y3 + o + 3 * L);
      for (int k = 0; k < rank; k++) {
        int b = bAt + k * n + o;
        FloatVector w0 = FloatVector.fromArray(F, bColumns, b);
        FloatVector w1 = FloatVector.fromArray(F, bColumns, b + L);
        FloatVector w2 = FloatVector.fromArray(F, bColumns, b + 2 * L);
        FloatVector w3 = FloatVector.fromArray(F, bColumns, b + 3 * L);
        FloatVector m = FloatVector.broadcast(F, mid[z0 + k]);
        c00 = w0.fma(m, c00);
        c01 = w1.fma(m, c01);
        c02 = w2.fma(m, c02);
        c03 = w3.fma(m, c03);
        m = FloatVector.broadcast(F, mid[z1 + k]);
        c10 = w0.fma(m, c10);
        c11 = w1.fma(m, c11);
        c12 = w2.fma(m, c12);
        c13 = w3.fma(m, c13);
        m = FloatVector.broadcast(F, mid[z2 + k]);
        c20 = w0.fma(m, c20);
        c21 = w1.fma(m, c21);
        c22 = w2.fma(m, c22);
        c23 = w3.fma(m, c23);
        m = FloatVector.broadcast(F, mid[z3 + k]);
        c30 = w0.fma(m, c30);
        c31 = w1.fma(m, c31);
        c32 = w2.fma(m, c32);
        c33 = w3.fma(m, c33);
      }
      c00.intoArray(y, y0 + o);
      c01.intoArray(y, y0 + o + L);
      c02.intoArray(y, y0 + o + 2 * L);
      c03.intoArray(y, y0 + o + 3 * L);
      c10.intoArray(y, y1 + o);
      c11.intoArray(y, y1 + o + L);
      c12.intoArray(y, y1 + o + 2 * L);
      c13.intoArray(y, y1 + o + 3 * L);
      c20.intoArray(y, y2 + o);
      c21.intoArray(y, y2 + o + L);
      c22.intoArray(y, y2 + o + 2 * L);
      c23.intoArray(y, y2 + o + 3 * L);
      c30.intoArray(y, y3 + o);
      c31.intoArray(y, y3 + o + L);
      c32.intoArray(y, y3 + o + 2 * L);
      c33.intoArray(y, y3 + o + 3 * L);
    }
    for (int r = 0; r < 4; r++) { // the columns past the last run of four vectors, row by row
      expandRank(mid, z0 + r * rank, bColumns, bAt, rank, y, y0 + r * n, n, o);
    }
  }

  /** {@code mid[at + k] = A[k] · x} for each of the {@code rank} rows (A's from {@code aAt}), four at a time (four independent sums, one load of x). */
  private static void reduceRank(float[] x, int xOff, int n, float[] aRows, int aAt, int rank, float[] mid, int at) {
    int upper = F.loopBound(n);
    int k = 0;
    for (; k + 4 <= rank; k += 4) {
      int a0 = aAt + k * n;
      FloatVector s0 = FloatVector.zero(F);
      FloatVector s1 = s0;
      FloatVector s2 = s0;
      FloatVector s3 = s0;
      int i = 0;
      for (; i < upper; i += L) {
        FloatVector v = FloatVector.fromArray(F, x, xOff + i);
        s0 = FloatVector.fromArray(F, aRows, a0 + i).fma(v, s0);
        s1 = FloatVector.fromArray(F, aRows, a0 + n + i).fma(v, s1);
        s2 = FloatVector.fromArray(F, aRows, a0 + 2 * n + i).fma(v, s2);
        s3 = FloatVector.fromArray(F, aRows, a0 + 3 * n + i).fma(v, s3);
      }
      float m0 = s0.reduceLanes(VectorOperators.ADD);
      float m1 = s1.reduceLanes(VectorOperators.ADD);
      float m2 = s2.reduceLanes(VectorOperators.ADD);
      float m3 = s3.reduceLanes(VectorOperators.ADD);
      for (; i < n; i++) {
        float v = x[xOff + i];
        m0 += aRows[a0 + i] * v;
        m1 += aRows[a0 + n + i] * v;
        m2 += aRows[a0 + 2 * n + i] * v;
        m3 += aRows[a0 + 3 * n + i] * v;
      }
      mid[at + k] = m0;
      mid[at + k + 1] = m1;
      mid[at + k + 2] = m2;
      mid[at + k + 3] = m3;
    }
    for (; k < rank; k++) {
      mid[at + k] = dot(aRows, aAt + k * n, x, xOff, n);
    }
  }

  /**
   * {@code y += Σ_k mid[at + k] · B[k]} (B's columns from {@code bAt}) over columns {@code [from, n)}: each run of four
   * vectors of y loaded and stored once, its sums over k independent.
   */
  private static void expandRank(float[] mid, int at, float[] bColumns, int bAt, int rank, float[] y, int yOff, int n, int from) {
    int upper = from + F.loopBound(n - from);
    int o = from;
    for (; o + 4 * L <= upper; o += 4 * L) {
      FloatVector y0 = FloatVector.fromArray(F, y, yOff + o);
      FloatVector y1 = FloatVector.fromArray(F, y, yOff + o + L);
      FloatVector y2 = FloatVector.fromArray(F, y, yOff + o + 2 * L);
      FloatVector y3 = FloatVector.fromArray(F, y, yOff + o + 3 * L);
      for (int k = 0; k < rank; k++) {
        FloatVector m = FloatVector.broadcast(F, mid[at + k]);
        int b = bAt + k * n + o;
        y0 = FloatVector.fromArray(F, bColumns, b).fma(m, y0);
        y1 = FloatVector.fromArray(F, bColumns, b + L).fma(m, y1);
        y2 = FloatVector.fromArray(F, bColumns, b + 2 * L).fma(m, y2);
        y3 = FloatVector.fromArray(F, bColumns, b + 3 * L).fma(m, y3);
      }
      y0.intoArray(y, yOff + o);
      y1.intoArray(y, yOff + o + L);
      y2.intoArray(y, yOff + o + 2 * L);
      y3.intoArray(y, yOff + o + 3 * L);
    }
    for (; o < upper; o += L) {
      FloatVector acc = FloatVector.fromArray(F, y, yOff + o);
      for (int k = 0; k < rank; k++) {
        acc = FloatVector.fromArray(F, bColumns, bAt + k * n + o).fma(FloatVector.broadcast(F, mid[at + k]), acc);
      }
      acc.intoArray(y, yOff + o);
    }
    for (; o < n; o++) {
      float acc = y[yOff + o];
      for (int k = 0; k < rank; k++) {
        acc += mid[at + k] * bColumns[bAt + k * n + o];
      }
      y[yOff + o] = acc;
    }
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
  public void rope(float[] x, int rows, int heads, int headDim, int[] positions, float[] invFreq, float scale) {
    int half = invFreq.length;
    runner.forRange(rows, 8, (from, to) -> {
      float[] cos = new float[half];
      float[] sin = new float[half];
      int upper = F.loopBound(half);
      for (int t = from; t < to; t++) {
        for (int i = 0; i < half; i++) {
          double angle = (double) positions[t] * invFreq[i];
          cos[i] = (float) Math.cos(angle) * scale;
          sin[i] = (float) Math.sin(angle) * scale;
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

  /** As {@link #siluMul}, by 0.5·x·(1 + tanh(u)) = x·σ(2u): {@code x / (1 + exp(-2u))}. */
  @Override
  public void geluTanhMul(float[] gate, float[] up, int n) {
    float a = (float) (2 * Math.sqrt(2 / Math.PI));
    float b = (float) (2 * Math.sqrt(2 / Math.PI) * 0.044715);
    runner.forRange(n, 4096, (from, to) -> {
      int i = from;
      int upper = from + F.loopBound(to - from);
      for (; i < upper; i += L) {
        FloatVector g = FloatVector.fromArray(F, gate, i);
        FloatVector twoU = g.mul(g).fma(b, a).mul(g); // 2u = g·(a + b·g²)
        FloatVector gelu = g.div(twoU.neg().lanewise(VectorOperators.EXP).add(1f));
        gelu.mul(FloatVector.fromArray(F, up, i)).intoArray(gate, i);
      }
      for (; i < to; i++) {
        float g = gate[i];
        gate[i] = g / (1f + (float) Math.exp(-g * (a + b * g * g))) * up[i];
      }
    });
  }

  // ---- attention ----------------------------------------------------------------------------

  @Override
  public void attention(AttentionBatch b) {
    int heads = b.numHeads();
    int rows = b.rows();
    // Under a prefill chunk, rows of one sequence read the same entries: they go in runs of up to
    // WIDEN_ROWS that attend over their KV head's entries gathered out of the blocks into
    // contiguous f32 (16-bit ones widened): once per sequence for all its runs where the head size
    // suits the micro-tile and the gathers fit, else once per run.
    boolean[] widened = null;
    if (rows >= WIDEN_MIN_ROWS) {
      List<int[]> runs = new ArrayList<>();
      for (int t = 0; t < rows; ) {
        int end = t + 1;
        while (end < rows && end - t < WIDEN_ROWS && b.blockTables()[end] == b.blockTables()[t]) {
          end++;
        }
        if (end - t >= WIDEN_MIN_ROWS) {
          runs.add(new int[] {t, end});
          widened = widened == null ? new boolean[rows] : widened;
          java.util.Arrays.fill(widened, t, end, true);
        }
        t = end;
      }
      int kvHeads = b.numKvHeads();
      if (b.headDim() % PANEL != 0 || !attendRunsInPanels(b, runs)) {
        runner.forRange(runs.size() * kvHeads, 1, (from, to) -> {
          for (int job = from; job < to; job++) {
            int[] run = runs.get(job / kvHeads);
            attendWidened(b, run[0], run[1], job % kvHeads);
          }
        });
      }
    }
    // The other rows (decode steps).
    int[] left = new int[rows];
    int n = 0;
    for (int t = 0; t < rows; t++) {
      if (widened == null || !widened[t]) {
        left[n++] = t;
      }
    }
    if (n > 0) {
      attendSingleRows(b, left, n);
    }
  }

  /** Positions a decode row's chunk takes at least (one job each; fewer are not worth a hand-off). */
  private static final int MIN_CHUNK = 256;

  /**
   * Rows that attend alone (decode steps), split into chunks of whole blocks — several per row
   * when there are fewer rows than threads (flash decoding) — one job each over every head: a
   * block's slots hold every KV head side by side, so a chunk reads its blocks front to back, the
   * way memory streams best (a job per KV head instead read a quarter of each slot while the
   * prefetcher fetched the rest: 1.8× slower at 8,192 tokens). Contexts too short to split give
   * their threads KV heads instead. Each chunk leaves a running maximum, sum and unnormalised
   * output per head; the chunks of a row are merged after.
   */
  private void attendSingleRows(AttentionBatch b, int[] left, int n) {
    int blockSize = b.blockSize();
    int heads = b.numHeads();
    int part = b.headDim() + 2;
    int target = 2 * runner.threads();
    // Chunks per row, and where each row's chunks start among all of them.
    int[] chunkSize = new int[n];
    int[] rowJobs = new int[n + 1];
    long work = 0; // multiply-adds
    for (int r = 0; r < n; r++) {
      int first = b.firstVisible(left[r]);
      int length = b.positions()[left[r]] + 1 - first;
      int chunks = Math.max(1, Math.min((target + n - 1) / n, length / MIN_CHUNK));
      chunkSize[r] = ((length + chunks - 1) / chunks + blockSize - 1) / blockSize * blockSize;
      int count = 0;
      for (int from = first; from <= b.positions()[left[r]]; from = from / blockSize * blockSize + chunkSize[r]) {
        count++;
      }
      rowJobs[r + 1] = rowJobs[r] + count;
      work += (long) length * b.headDim() * 2 * heads;
    }
    int jobs = rowJobs[n];
    int[] rowOf = new int[jobs];
    int[] fromOf = new int[jobs];
    int[] toOf = new int[jobs];
    for (int r = 0; r < n; r++) {
      int end = b.positions()[left[r]] + 1;
      int from = b.firstVisible(left[r]);
      for (int job = rowJobs[r]; job < rowJobs[r + 1]; job++) {
        rowOf[job] = left[r];
        fromOf[job] = from;
        toOf[job] = Math.min(end, from / blockSize * blockSize + chunkSize[r]);
        from = toOf[job];
      }
    }
    float[] partials = scratch(partialScratch, jobs * heads * part); // every entry written by a chunk's job
    int kvHeads = b.numKvHeads();
    int ranges = Math.max(1, Math.min(kvHeads, (target + jobs - 1) / jobs)); // KV heads split this many ways
    int tasks = jobs * ranges;
    // Short contexts are not worth a hand-off: ~16K multiply-adds a hand-off at least.
    int grain = (int) Math.max(1, Math.min(tasks, 16_384L * tasks / Math.max(1, work)));
    runner.forRange(tasks, grain, (from, to) -> {
      for (int job = from; job < to; job++) {
        int chunk = job / ranges;
        int range = job % ranges;
        attendChunk(b, rowOf[chunk], fromOf[chunk], toOf[chunk], range * kvHeads / ranges, (range + 1) * kvHeads / ranges, partials,
            chunk * heads * part);
      }
    });
    int headDim = b.headDim();
    float[] merged = new float[headDim];
    for (int r = 0; r < n; r++) {
      int t = left[r];
      for (int h = 0; h < heads; h++) {
        float top = Float.NEGATIVE_INFINITY;
        for (int job = rowJobs[r]; job < rowJobs[r + 1]; job++) {
          top = Math.max(top, partials[(job * heads + h) * part]);
        }
        float total = 0;
        java.util.Arrays.fill(merged, 0f);
        for (int job = rowJobs[r]; job < rowJobs[r + 1]; job++) {
          int at = (job * heads + h) * part;
          float weight = (float) Math.exp(partials[at] - top);
          total += weight * partials[at + 1];
          axpy(weight, partials, at + 2, merged, 0, headDim);
        }
        scale(merged, 0, headDim, 1f / total);
        writeOutput(b, t, h, merged, 0);
      }
    }
  }

  /** Rows of one sequence that gather their KV together, at most and at least. */
  private static final int WIDEN_ROWS = 64;
  private static final int WIDEN_MIN_ROWS = 4;

  /**
   * Rows {@code [from, to)} (one sequence) and every query head reading KV head {@code g}: that
   * head's keys and values from the run's first visible position to its last gathered as f32
   * (16-bit ones widened, in the permuted order, and the query heads permuted to match) once, then
   * each row and head attends over them.
   */
  private void attendWidened(AttentionBatch b, int from, int to, int g) {
    int headDim = b.headDim();
    int group = b.numHeads() / b.numKvHeads();
    int base = Integer.MAX_VALUE;
    int len = 0;
    for (int t = from; t < to; t++) {
      base = Math.min(base, b.firstVisible(t));
      len = Math.max(len, b.positions()[t] + 1);
    }
    if (headDim % PANEL == 0) { // head sizes of 64, 96, 128, …: the micro-tiled path, this run's own gather
      int stride = (len - base + PANEL - 1) / PANEL * PANEL;
      float[] panels = scratch(keyTScratch, 2 * headDim * stride);
      gatherPanels(b, from, base, len, g, panels, 0, stride);
      attendTiles(b, from, to, g, panels, 0, stride, base);
      return;
    }
    // Keys transposed, [element][position] with a stride of whole vectors: a query's scores for L
    // positions at a time are FMAs of broadcast query elements, no reduction per position. Each
    // key goes through the head scratch on its way there. Gathered position p is the sequence's
    // base + p.
    int gathered = len - base;
    int stride = (gathered + L - 1) / L * L;
    float[] kT = scratch(keyTScratch, headDim * stride);
    float[] v = scratch(valueScratch, gathered * headDim);
    float[] head = scratch(headScratch, 4 * headDim);
    boolean halves = b.kvDtype() != DType.F32;
    boolean bf16 = b.kvDtype() == DType.BF16;
    for (int p = 0; p < gathered; p++) {
      long off = b.cacheOffset(from, base + p, g);
      if (halves) {
        widenHead(b, b.keys(), off, bf16, head, 0);
        widenHead(b, b.values(), off, bf16, v, p * headDim);
      } else {
        MemorySegment.copy(b.keys(), java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, off, head, 0, headDim);
        MemorySegment.copy(b.values(), java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, off, v, p * headDim, headDim);
      }
      for (int i = 0; i < headDim; i++) {
        kT[i * stride + p] = head[i];
      }
    }
    for (int i = 0; i < headDim; i++) {
      java.util.Arrays.fill(kT, i * stride + gathered, (i + 1) * stride, 0f);
    }
    // Two rows at a time (the last alone, as a pair with itself): every key and value loaded feeds
    // both. head: [query A | output A | query B | output B]; scores: [A | B].
    float[] scores = scratch(scoreScratch, 2 * stride);
    float scale = (float) (1.0 / Math.sqrt(headDim));
    for (int h = g * group; h < (g + 1) * group; h++) {
      for (int t = from; t < to; t += 2) {
        int u = Math.min(t + 1, to - 1);
        int visibleA = b.positions()[t] + 1 - base;
        int visibleB = b.positions()[u] + 1 - base;
        int frontA = b.firstVisible(t) - base; // positions before the row's window
        int frontB = b.firstVisible(u) - base;
        int n = Math.max(visibleA, visibleB);
        readQuery(b, t, h, head, 0);
        readQuery(b, u, h, head, 2 * headDim);
        transposedScores(head, headDim, kT, stride, n, scale, scores);
        float invA = softmaxWeights(scores, frontA, visibleA - frontA, b.softcap());
        float invB = softmaxWeights(scores, stride + frontB, visibleB - frontB, b.softcap());
        java.util.Arrays.fill(scores, 0, frontA, 0f); // a row sees no position outside its window
        java.util.Arrays.fill(scores, stride, stride + frontB, 0f);
        java.util.Arrays.fill(scores, visibleA, n, 0f); // the shorter row sees fewer positions
        java.util.Arrays.fill(scores, stride + visibleB, stride + n, 0f);
        weightedSum(scores, stride, n, invA, invB, v, headDim, head);
        writeOutput(b, t, h, head, headDim);
        writeOutput(b, u, h, head, 3 * headDim);
      }
    }
  }

  /** Most floats the gathered KV of one batch's prefill runs may take at once (64 MiB); beyond, each run gathers its own. */
  private static final long SHARED_PANEL_FLOATS = 16L << 20;
  private final long sharedPanelFloats;

  /** The KV of each sequence's prefill runs gathered once for all of them: [sequence][KV head][keys | values]. */
  private float[] sequencePanels = new float[0];

  /**
   * Runs of one sequence (consecutive, one block table) read the same KV prefix: it is gathered
   * once per sequence and KV head (in parallel), then every run and KV head attends over it (in
   * parallel). False, doing nothing, when the gathered KV would take more than {@link
   * #sharedPanelFloats}.
   */
  private boolean attendRunsInPanels(AttentionBatch b, List<int[]> runs) {
    int headDim = b.headDim();
    int kvHeads = b.numKvHeads();
    List<int[]> sequences = new ArrayList<>(); // {first row, first position, end position, stride, offset}
    int[] sequenceOfRun = new int[runs.size()];
    long total = 0;
    for (int r = 0; r < runs.size(); ) {
      int[] table = b.blockTables()[runs.get(r)[0]];
      int first = runs.get(r)[0];
      int base = Integer.MAX_VALUE;
      int len = 0;
      for (; r < runs.size() && b.blockTables()[runs.get(r)[0]] == table; r++) {
        for (int t = runs.get(r)[0]; t < runs.get(r)[1]; t++) {
          base = Math.min(base, b.firstVisible(t));
          len = Math.max(len, b.positions()[t] + 1);
        }
        sequenceOfRun[r] = sequences.size();
      }
      int stride = (len - base + PANEL - 1) / PANEL * PANEL;
      sequences.add(new int[] {first, base, len, stride, (int) Math.min(total, Integer.MAX_VALUE)});
      total += 2L * kvHeads * headDim * stride;
    }
    if (total > sharedPanelFloats) {
      return false;
    }
    if (sequencePanels.length < total) {
      sequencePanels = new float[(int) total];
    }
    float[] panels = sequencePanels;
    runner.forRange(sequences.size() * kvHeads, 1, (from, to) -> {
      for (int job = from; job < to; job++) {
        int[] seq = sequences.get(job / kvHeads);
        int g = job % kvHeads;
        gatherPanels(b, seq[0], seq[1], seq[2], g, panels, seq[4] + 2 * g * headDim * seq[3], seq[3]);
      }
    });
    runner.forRange(runs.size() * kvHeads, 1, (from, to) -> {
      for (int job = from; job < to; job++) {
        int[] run = runs.get(job / kvHeads);
        int[] seq = sequences.get(sequenceOfRun[job / kvHeads]);
        int g = job % kvHeads;
        attendTiles(b, run[0], run[1], g, panels, seq[4] + 2 * g * headDim * seq[3], seq[3], seq[1]);
      }
    });
    return true;
  }

  /**
   * KV head {@code g}'s positions {@code [base, len)}, as row {@code row} reads them, into {@code
   * panels[at, at + 2·headDim·stride)} (position base + p at p): keys as [position panel][element][2L
   * positions] (positions past the last zero, so they score 0), then values as [element
   * panel][position][2L elements].
   */
  private void gatherPanels(AttentionBatch b, int row, int base, int len, int g, float[] panels, int at, int stride) {
    int headDim = b.headDim();
    int values = at + headDim * stride;
    float[] entry = scratch(rowScratch, headDim);
    boolean bf16 = b.kvDtype() == DType.BF16;
    int gathered = len - base;
    for (int p = 0; p < gathered; p++) {
      long off = b.cacheOffset(row, base + p, g);
      readHead(b, b.keys(), off, bf16, entry, 0);
      for (int i = 0, k = at + p / PANEL * headDim * PANEL + p % PANEL; i < headDim; i++, k += PANEL) {
        panels[k] = entry[i];
      }
      readHead(b, b.values(), off, bf16, entry, 0);
      for (int d = 0; d < headDim; d += PANEL) {
        System.arraycopy(entry, d, panels, values + d * stride + p * PANEL, PANEL);
      }
    }
    for (int p = gathered; p < stride; p++) {
      for (int i = 0, k = at + p / PANEL * headDim * PANEL + p % PANEL; i < headDim; i++, k += PANEL) {
        panels[k] = 0f;
      }
    }
  }

  /**
   * Rows {@code [from, to)}'s queries (each row × each query head of KV head {@code g}, in row
   * order) ten at a time on AVX-512 (else six) through the matmul's micro-tiles, over that head's KV
   * from position {@code base} gathered at {@code panels[at]} by {@link #gatherPanels}. Scores =
   * scaled queries × keys (2L positions a pass), a softmax per query over the positions it sees,
   * outputs = weights × values (2L elements a pass); the group's queries share every key and value
   * vector loaded.
   */
  private void attendTiles(AttentionBatch b, int from, int to, int g, float[] panels, int at, int stride, int base) {
    int headDim = b.headDim();
    int values = at + headDim * stride;
    float scale = (float) (1.0 / Math.sqrt(headDim));
    int group = b.numHeads() / b.numKvHeads();
    int queries = (to - from) * group;
    float[] scores = scratch(scoreScratch, WIDE_MICRO_TOKENS * stride);
    float[] head = scratch(headScratch, 2 * WIDE_MICRO_TOKENS * headDim); // [queries | outputs]
    int outs = WIDE_MICRO_TOKENS * headDim;
    int[] front = new int[WIDE_MICRO_TOKENS]; // each query's gathered positions before its window
    int[] visible = new int[WIDE_MICRO_TOKENS];
    float[] inv = new float[WIDE_MICRO_TOKENS]; // each query's 1 / softmax sum
    for (int q0 = 0; q0 < queries; q0 += WIDE_MICRO_TOKENS) {
      int count = Math.min(WIDE_MICRO_TOKENS, queries - q0);
      int n = 0;
      for (int j = 0; j < count; j++) {
        int t = from + (q0 + j) / group;
        readQuery(b, t, g * group + (q0 + j) % group, head, j * headDim);
        scale(head, j * headDim, headDim, scale);
        front[j] = b.firstVisible(t) - base;
        visible[j] = b.positions()[t] + 1 - base;
        n = Math.max(n, visible[j]);
      }
      int positions = (n + PANEL - 1) / PANEL * PANEL;
      for (int p = 0; p < positions; p += PANEL) {
        microTiles(head, headDim, 0, count, panels, at + p * headDim, 0, headDim, scores, p, stride, true);
      }
      for (int j = 0; j < count; j++) {
        inv[j] = softmaxWeights(scores, j * stride + front[j], visible[j] - front[j], b.softcap());
        java.util.Arrays.fill(scores, j * stride, j * stride + front[j], 0f); // positions before this row's window
        java.util.Arrays.fill(scores, j * stride + visible[j], j * stride + n, 0f); // positions after this row's
      }
      for (int d = 0; d < headDim; d += PANEL) {
        microTiles(scores, stride, 0, count, panels, values + d * stride, 0, n, head, outs + d, headDim, true);
      }
      for (int j = 0; j < count; j++) {
        int o = outs + j * headDim;
        scale(head, o, headDim, inv[j]);
        writeOutput(b, from + (q0 + j) / group, g * group + (q0 + j) % group, head, o);
      }
    }
  }

  /**
   * Scores of two queries ({@code q[0, headDim)} and {@code q[2·headDim, 3·headDim)}) against keys
   * transposed into {@code kT} ({@code kT[i · stride + p]}), for every {@code p} below {@code n}
   * rounded up to a whole vector: {@code scores[p]} and {@code scores[stride + p]} = scale · q · k_p.
   * Two vectors of positions at a time: each key vector loaded and each broadcast query element
   * feed two FMAs.
   */
  private static void transposedScores(float[] q, int headDim, float[] kT, int stride, int n, float scale, float[] scores) {
    int blocks = (n + L - 1) / L * L;
    int qb = 2 * headDim;
    int p = 0;
    for (; p + 2 * L <= blocks; p += 2 * L) {
      FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F), b0 = FloatVector.zero(F), b1 = FloatVector.zero(F);
      for (int i = 0; i < headDim; i++) {
        FloatVector qa = FloatVector.broadcast(F, q[i]);
        FloatVector qbi = FloatVector.broadcast(F, q[qb + i]);
        int row = i * stride + p;
        FloatVector k0 = FloatVector.fromArray(F, kT, row);
        FloatVector k1 = FloatVector.fromArray(F, kT, row + L);
        a0 = k0.fma(qa, a0);
        a1 = k1.fma(qa, a1);
        b0 = k0.fma(qbi, b0);
        b1 = k1.fma(qbi, b1);
      }
      a0.mul(scale).intoArray(scores, p);
      a1.mul(scale).intoArray(scores, p + L);
      b0.mul(scale).intoArray(scores, stride + p);
      b1.mul(scale).intoArray(scores, stride + p + L);
    }
    for (; p < blocks; p += L) {
      FloatVector a = FloatVector.zero(F), c = FloatVector.zero(F);
      for (int i = 0; i < headDim; i++) {
        FloatVector k = FloatVector.fromArray(F, kT, i * stride + p);
        a = k.fma(FloatVector.broadcast(F, q[i]), a);
        c = k.fma(FloatVector.broadcast(F, q[qb + i]), c);
      }
      a.mul(scale).intoArray(scores, p);
      c.mul(scale).intoArray(scores, stride + p);
    }
  }

  /**
   * The two rows' outputs: {@code head[headDim + i] = invA · Σ_p wA[p] · v[p · headDim + i]} with
   * {@code wA = scores[0, n)}, and the same for B ({@code scores[stride, stride + n)}, into
   * {@code head[3·headDim + i]}). Per 2L elements of the head, four accumulators stay in
   * registers over every position and each value vector loaded feeds both rows.
   */
  private static void weightedSum(float[] scores, int stride, int n, float invA, float invB, float[] v, int headDim, float[] head) {
    int outA = headDim;
    int outB = 3 * headDim;
    int c = 0;
    for (; c + 2 * L <= headDim; c += 2 * L) {
      FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F), b0 = FloatVector.zero(F), b1 = FloatVector.zero(F);
      for (int p = 0, row = c; p < n; p++, row += headDim) {
        FloatVector wa = FloatVector.broadcast(F, scores[p]);
        FloatVector wb = FloatVector.broadcast(F, scores[stride + p]);
        FloatVector v0 = FloatVector.fromArray(F, v, row);
        FloatVector v1 = FloatVector.fromArray(F, v, row + L);
        a0 = v0.fma(wa, a0);
        a1 = v1.fma(wa, a1);
        b0 = v0.fma(wb, b0);
        b1 = v1.fma(wb, b1);
      }
      a0.mul(invA).intoArray(head, outA + c);
      a1.mul(invA).intoArray(head, outA + c + L);
      b0.mul(invB).intoArray(head, outB + c);
      b1.mul(invB).intoArray(head, outB + c + L);
    }
    if (c < headDim) { // the rest of a head that is not a multiple of 2L
      java.util.Arrays.fill(head, outA + c, outA + headDim, 0f);
      java.util.Arrays.fill(head, outB + c, outB + headDim, 0f);
      for (int p = 0; p < n; p++) {
        axpy(scores[p] * invA, v, p * headDim + c, head, outA + c, headDim - c);
        axpy(scores[stride + p] * invB, v, p * headDim + c, head, outB + c, headDim - c);
      }
    }
  }

  /**
   * {@code scores[from + p] = exp(scores[from + p] − max)} for {@code p < n}, max being theirs,
   * each capped first where {@code softcap} > 0; returns 1 / their sum (softmax = each × it).
   */
  private static float softmaxWeights(float[] scores, int from, int n, float softcap) {
    if (softcap > 0) {
      cap(scores, from, n, softcap);
    }
    return 1f / expShifted(scores, from, n, max(scores, from, n));
  }

  /** {@code x[from + i] = c·tanh(x[from + i] / c)} for {@code i < n}: Gemma 2's capped attention scores. */
  private static void cap(float[] x, int from, int n, float c) {
    int upper = F.loopBound(n);
    int i = 0;
    for (; i < upper; i += L) {
      FloatVector.fromArray(F, x, from + i).div(c).lanewise(VectorOperators.TANH).mul(c).intoArray(x, from + i);
    }
    for (; i < n; i++) {
      x[from + i] = c * (float) Math.tanh(x[from + i] / c);
    }
  }

  /** Row {@code t}'s query head {@code h} into {@code out[at]}: permuted (even elements, then odd, per 2L block) for a 16-bit cache, whose entries widen so. */
  private static void readQuery(AttentionBatch b, int t, int h, float[] out, int at) {
    int headDim = b.headDim();
    int q = (t * b.numHeads() + h) * headDim;
    if (b.kvDtype() != DType.F32) {
      permuteEvenOdd(b.q(), q, out, at, headDim);
    } else {
      System.arraycopy(b.q(), q, out, at, headDim);
    }
  }

  /** The inverse of {@link #readQuery}: {@code from[at]} as row {@code t}'s output head {@code h}. */
  private static void writeOutput(AttentionBatch b, int t, int h, float[] from, int at) {
    int headDim = b.headDim();
    int o = (t * b.numHeads() + h) * headDim;
    if (b.kvDtype() != DType.F32) {
      unpermuteEvenOdd(from, at, b.out(), o, headDim);
    } else {
      System.arraycopy(from, at, b.out(), o, headDim);
    }
  }

  private static float[] scratch(ThreadLocal<float[]> scratch, int n) {
    float[] a = scratch.get();
    if (a.length < n) {
      a = new float[Math.max(n, a.length * 2)];
      scratch.set(a);
    }
    return a;
  }

  /** One 16-bit head vector at byte {@code off} of {@code cache} as f32 into {@code out[at]}, permuted per 2L block. */
  private static void widenHead(AttentionBatch b, MemorySegment cache, long off, boolean bf16, float[] out, int at) {
    int headDim = b.headDim();
    int upper = (headDim / (2 * L)) * 2 * L;
    widenHalfPairs(cache, off, upper, bf16, out, at);
    for (int i = upper; i < headDim; i++) {
      out[at + i] = b.entry(cache, off, i);
    }
  }

  /** One head's entry at {@code off} as f32 in {@code out[at, at + headDim)}: 16-bit ones widened, in the permuted order. */
  private static void readHead(AttentionBatch b, MemorySegment cache, long off, boolean bf16, float[] out, int at) {
    if (b.kvDtype() == DType.F32) {
      MemorySegment.copy(cache, java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, off, out, at, b.headDim());
    } else {
      widenHead(b, cache, off, bf16, out, at);
    }
  }

  /** {@code y[yOff, yOff + n) += a · x[xOff, xOff + n)}. */
  private static void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) {
    FloatVector va = FloatVector.broadcast(F, a);
    int upper = F.loopBound(n);
    int i = 0;
    for (; i < upper; i += L) {
      FloatVector.fromArray(F, x, xOff + i).fma(va, FloatVector.fromArray(F, y, yOff + i)).intoArray(y, yOff + i);
    }
    for (; i < n; i++) {
      y[yOff + i] += a * x[xOff + i];
    }
  }

  /** Positions whose values a decode row adds per pass: their loads overlap, one store per pass. */
  private static final int VALUE_ROWS = 4;

  /**
   * Row {@code t}'s positions {@code [from, to)} over the query heads of KV heads {@code [gFrom,
   * gTo)}, block by block: each slot's keys
   * scored against the query heads of its KV head (straight from the cache's 16-bit pairs where the
   * head size allows), an online softmax per head (the block's weights against the running
   * maximum, the output so far rescaled where it rose), then the block's values
   * {@value #VALUE_ROWS} slots a pass into each head's output, which stays in L1. Leaves per head
   * {@code [maximum, sum of exp(score − maximum), output (permuted for 16-bit entries)]} at {@code
   * partials[at + h·(headDim + 2)]}.
   */
  private void attendChunk(AttentionBatch b, int t, int from, int to, int gFrom, int gTo, float[] partials, int at) {
    int headDim = b.headDim();
    int heads = b.numHeads();
    int kvHeads = b.numKvHeads();
    int group = heads / kvHeads;
    int hFrom = gFrom * group;
    int hTo = gTo * group;
    int kvDim = b.kvDim();
    boolean halves = b.kvDtype() != DType.F32;
    boolean bf16 = b.kvDtype() == DType.BF16;
    boolean direct = halves && headDim % (2 * L) == 0; // keys scored without widening them first
    float scale = (float) (1.0 / Math.sqrt(headDim));
    int blockSize = b.blockSize();
    // head: [queries, scaled | outputs | one key widened | VALUE_ROWS slots of values widened];
    // 16-bit entries widen permuted (even elements, then odd, per 2L block), so queries and outputs are too.
    int outs = heads * headDim;
    int key = 2 * heads * headDim;
    int values = key + headDim;
    float[] head = scratch(headScratch, values + VALUE_ROWS * kvDim);
    for (int h = hFrom; h < hTo; h++) {
      readQuery(b, t, h, head, h * headDim);
      scale(head, h * headDim, headDim, scale);
    }
    java.util.Arrays.fill(head, outs, key, 0f);
    float[] scores = scratch(scoreScratch, heads * blockSize); // this block's, [head][slot]
    float[] maxima = new float[heads]; // each head's running maximum score, and its sum of exp(score − maximum)
    float[] sums = new float[heads];
    java.util.Arrays.fill(maxima, Float.NEGATIVE_INFINITY);
    int[] table = b.blockTables()[t];
    long slotBytes = (long) kvDim * b.kvDtype().bytes();
    long headBytes = (long) headDim * b.kvDtype().bytes();
    for (int p = from; p < to; ) {
      int stop = Math.min(to, (p / blockSize + 1) * blockSize);
      int k = stop - p;
      long start = ((long) table[p / blockSize] * blockSize + p % blockSize) * slotBytes;
      long off = start;
      for (int i = 0; i < k; i++, off += slotBytes) {
        for (int g = gFrom; g < gTo; g++) {
          long entry = off + g * headBytes;
          if (!direct) {
            readHead(b, b.keys(), entry, bf16, head, key);
          }
          for (int h = g * group; h < (g + 1) * group; h++) {
            scores[h * blockSize + i] = direct
                ? dotHalfPairs(head, h * headDim, b.keys(), entry, headDim, bf16)
                : dot(head, h * headDim, head, key, headDim);
          }
        }
      }
      for (int h = hFrom; h < hTo; h++) {
        if (b.softcap() > 0) {
          cap(scores, h * blockSize, k, b.softcap());
        }
        float blockMax = max(scores, h * blockSize, k);
        if (blockMax > maxima[h]) {
          float rescale = (float) Math.exp(maxima[h] - blockMax); // 0 for the first block
          sums[h] *= rescale;
          scale(head, outs + h * headDim, headDim, rescale);
          maxima[h] = blockMax;
        }
        sums[h] += expShifted(scores, h * blockSize, k, maxima[h]);
      }
      off = start;
      for (int i = 0; i < k; i += VALUE_ROWS) {
        int rows = Math.min(VALUE_ROWS, k - i);
        for (int r = 0; r < rows; r++) {
          for (int g = gFrom; g < gTo; g++) {
            readHead(b, b.values(), off + r * slotBytes + g * headBytes, bf16, head, values + r * kvDim + g * headDim);
          }
        }
        for (int h = hFrom; h < hTo; h++) {
          addWeighted(head, values + h / group * headDim, kvDim, headDim, rows, scores, h * blockSize + i, head, outs + h * headDim);
        }
        off += rows * slotBytes;
      }
      p = stop;
    }
    int part = headDim + 2;
    for (int h = hFrom; h < hTo; h++) {
      partials[at + h * part] = maxima[h];
      partials[at + h * part + 1] = sums[h];
      System.arraycopy(head, outs + h * headDim, partials, at + h * part + 2, headDim);
    }
  }

  /** The largest of {@code x[from, from + n)}. */
  private static float max(float[] x, int from, int n) {
    int upper = F.loopBound(n);
    float m = Float.NEGATIVE_INFINITY;
    int i = 0;
    if (upper > 0) {
      FloatVector v = FloatVector.fromArray(F, x, from);
      for (i = L; i < upper; i += L) {
        v = v.max(FloatVector.fromArray(F, x, from + i));
      }
      m = v.reduceLanes(VectorOperators.MAX);
    }
    for (; i < n; i++) {
      m = Math.max(m, x[from + i]);
    }
    return m;
  }

  /** {@code x[from + i] = exp(x[from + i] − shift)} for {@code i < n}; returns their sum. */
  private static float expShifted(float[] x, int from, int n, float shift) {
    FloatVector top = FloatVector.broadcast(F, shift);
    FloatVector sums = FloatVector.zero(F);
    int upper = F.loopBound(n);
    int i = 0;
    for (; i < upper; i += L) {
      FloatVector e = FloatVector.fromArray(F, x, from + i).sub(top).lanewise(VectorOperators.EXP);
      e.intoArray(x, from + i);
      sums = sums.add(e);
    }
    float sum = sums.reduceLanes(VectorOperators.ADD);
    for (; i < n; i++) {
      float e = (float) Math.exp(x[from + i] - shift);
      x[from + i] = e;
      sum += e;
    }
    return sum;
  }

  /** {@code x[from, from + n) *= a}. */
  private static void scale(float[] x, int from, int n, float a) {
    FloatVector va = FloatVector.broadcast(F, a);
    int upper = F.loopBound(n);
    int i = 0;
    for (; i < upper; i += L) {
      FloatVector.fromArray(F, x, from + i).mul(va).intoArray(x, from + i);
    }
    for (; i < n; i++) {
      x[from + i] *= a;
    }
  }

  /**
   * {@code out[o, o + n) += Σ_r w[wOff + r] · rows[at + r·stride, at + r·stride + n)} for {@code r <
   * k} ({@code k ≤ 4}): each output vector loaded and stored once for the k rows.
   */
  private static void addWeighted(float[] rows, int at, int stride, int n, int k, float[] w, int wOff, float[] out, int o) {
    int upper = F.loopBound(n);
    int i = 0;
    if (k == VALUE_ROWS) {
      FloatVector w0 = FloatVector.broadcast(F, w[wOff]);
      FloatVector w1 = FloatVector.broadcast(F, w[wOff + 1]);
      FloatVector w2 = FloatVector.broadcast(F, w[wOff + 2]);
      FloatVector w3 = FloatVector.broadcast(F, w[wOff + 3]);
      for (; i < upper; i += L) {
        FloatVector pair01 = FloatVector.fromArray(F, rows, at + i).mul(w0).add(FloatVector.fromArray(F, rows, at + stride + i).mul(w1));
        FloatVector pair23 =
            FloatVector.fromArray(F, rows, at + 2 * stride + i).mul(w2).add(FloatVector.fromArray(F, rows, at + 3 * stride + i).mul(w3));
        FloatVector.fromArray(F, out, o + i).add(pair01.add(pair23)).intoArray(out, o + i);
      }
    }
    for (; i < n; i++) {
      float sum = 0;
      for (int r = 0; r < k; r++) {
        sum += w[wOff + r] * rows[at + r * stride + i];
      }
      out[o + i] += sum;
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
