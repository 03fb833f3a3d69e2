package dev.tandem.engine.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.model.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every kernel of a compute backend against {@link ScalarBackend} on fresh random inputs (a new
 * seed each run, printed on failure). Sizes include odd ones so that vector tails run.
 * Implementations extend this with {@link #create()}.
 */
abstract class ComputeBackendConformanceTest {
  private final ScalarBackend reference = new ScalarBackend();
  private final long seed = System.nanoTime();
  private final Random random = new Random(seed);
  private final Arena arena = Arena.ofShared();
  private ComputeBackend backend;

  protected abstract ComputeBackend create();

  @BeforeEach
  void open() {
    backend = create();
  }

  @AfterEach
  void close() {
    if (backend != null) { // null when create() skipped the case
      backend.close();
    }
    arena.close();
  }

  @ParameterizedTest(name = "{0} tokens={1} rows={2} cols={3}")
  @CsvSource({
    "F32, 1, 33, 64", "F32, 3, 17, 67", "F32, 37, 40, 130",
    "BF16, 1, 33, 64", "BF16, 5, 31, 71", "BF16, 64, 24, 256",
    "F16, 1, 33, 64", "F16, 4, 9, 65", "F16, 33, 40, 128",
    // Two or three tokens past the row-widening kernel's blocks of four (a step verifying proposed tokens).
    "BF16, 6, 13, 70", "F32, 7, 9, 33", "F16, 11, 8, 64",
    // Many tokens (the CPU backend's packed outer-product kernel): partial panels, several column
    // slices, token counts that are not a multiple of its micro-tile.
    "F32, 70, 45, 300", "BF16, 131, 70, 290", "F16, 97, 33, 257", "BF16, 64, 96, 1024",
    // Q8_0 (quantized from f32 at load; rows of whole 64-value interleaves): one token, a few, the
    // row-widening kernel, the outer-product one.
    "Q8_0, 1, 33, 64", "Q8_0, 1, 7, 1152", "Q8_0, 3, 17, 192", "Q8_0, 9, 31, 128", "Q8_0, 6, 12, 128", "Q8_0, 70, 45, 320", "Q8_0, 131, 70, 1024",
    // Q4_0 (rows of whole 128-value interleaves), the same kernels.
    "Q4_0, 1, 33, 128", "Q4_0, 1, 7, 1152", "Q4_0, 3, 17, 256", "Q4_0, 2, 5, 128", "Q4_0, 9, 31, 384", "Q4_0, 6, 12, 128", "Q4_0, 70, 45, 384", "Q4_0, 131, 70, 1024"
  })
  void matmul(DType dtype, int tokens, int rows, int cols) {
    WeightMatrix w = matrix(dtype, rows, cols);
    float[] x = randoms(tokens * cols, 1);
    float[] expected = new float[tokens * rows];
    float[] actual = new float[tokens * rows];
    if (refusesQuantized(dtype, () -> backend.matmul(x, tokens, w, actual))) {
      return;
    }
    reference.matmul(x, tokens, w, expected);
    backend.matmul(x, tokens, w, actual);
    assertClose(expected, actual, 1e-5, "matmul " + dtype);
  }

  /**
   * As a backend reads a large model's weights ({@link ComputeBackend#streamsWeightsPerStep}; the CPU
   * backend touches ahead of its batch-1 loads, up to each matrix's last bytes): the same products,
   * whole rows and odd tails, a matrix shorter than the touch distance included.
   */
  @ParameterizedTest(name = "{0} tokens={1} rows={2} cols={3}")
  @CsvSource({"BF16, 1, 33, 64", "BF16, 1, 300, 3072", "BF16, 3, 17, 1100", "F16, 2, 9, 65", "F16, 1, 40, 1024", "F32, 1, 33, 64"})
  void matmulOfALargeModel(DType dtype, int tokens, int rows, int cols) {
    backend.streamsWeightsPerStep(64L << 30);
    matmul(dtype, tokens, rows, cols);
  }

  /**
   * One token through bf16, Q8_0 or Q4_0 rows of more than 4,096 columns (a large model's down
   * projection), whole vectors and an odd tail, with and without touching ahead: a backend that rounds the activations
   * to bf16 there ({@link #roundsLongRowActivations}) matches the products of the rounded activations
   * exactly (within float summation); any other, the exact products. Either way within 2^-8 of
   * Σ|x·w| of the exact ones, twice bf16's rounding bound.
   */
  @ParameterizedTest(name = "{0} rows={1} cols={2} touching ahead {3}")
  @CsvSource({"BF16, 24, 8200, false", "BF16, 40, 9216, true", "BF16, 7, 4097, false", "BF16, 9, 4096, true",
      "Q8_0, 24, 9216, false", "Q8_0, 7, 4160, true", "Q8_0, 9, 4096, false",
      "Q4_0, 24, 9216, false", "Q4_0, 7, 4224, true", "Q4_0, 9, 4096, false"})
  void longRowsAtOneToken(DType dtype, int rows, int cols, boolean large) {
    if (large) {
      backend.streamsWeightsPerStep(64L << 30);
    }
    WeightMatrix w = matrix(dtype, rows, cols);
    float[] x = randoms(cols, 1);
    float[] actual = new float[rows];
    if (refusesQuantized(dtype, () -> backend.matmul(x, 1, w, actual))) {
      return;
    }
    backend.matmul(x, 1, w, actual);
    boolean rounds = roundsLongRowActivations() && cols > 4096;
    for (int r = 0; r < rows; r++) {
      double exact = 0;
      double rounded = 0;
      double magnitude = 0;
      for (int i = 0; i < cols; i++) {
        exact += (double) x[i] * w.get(r, i);
        rounded += (double) DType.BF16.round(x[i]) * w.get(r, i);
        magnitude += Math.abs((double) x[i] * w.get(r, i));
      }
      double expected = rounds ? rounded : exact;
      assertTrue(Math.abs(actual[r] - expected) <= 1e-5 * magnitude,
          "row " + r + " on " + backend.name() + ": " + actual[r] + " vs " + expected + (rounds ? " (activations in bf16)" : ""));
      assertTrue(Math.abs(actual[r] - exact) <= magnitude / 256, "row " + r + ": within bf16's rounding of the exact product");
    }
  }

  /** Whether the backend has kernels for quantized (Q8_0, Q4_0) weights; one without must refuse them, naming the CPU backend. */
  protected boolean quantizedKernels() {
    return true;
  }

  /** For quantized weights on a backend without their kernels: that {@code run} refuses them (then true). */
  private boolean refusesQuantized(DType dtype, org.junit.jupiter.api.function.Executable run) {
    if (!dtype.quantized() || quantizedKernels()) {
      return false;
    }
    String e = assertThrows(UnsupportedOperationException.class, run).getMessage();
    assertTrue(e.contains("--compute cpu"), e);
    return true;
  }

  /** Whether the backend rounds one token's activations to bf16 for bf16 and quantized rows of more than 4,096 columns. */
  protected boolean roundsLongRowActivations() {
    return false;
  }

  @ParameterizedTest(name = "{0} tokens={1}")
  @CsvSource({"F32, 3", "BF16, 9", "BF16, 100", "F16, 67", "Q8_0, 1", "Q8_0, 80", "Q4_0, 1", "Q4_0, 2", "Q4_0, 80"})
  void matmulOfSeveralMatricesAtOnce(DType dtype, int tokens) {
    int cols = dtype == DType.Q8_0 ? 192 : dtype == DType.Q4_0 ? 256 : 160;
    int[] rows = {40, 7, 33};
    WeightMatrix[] ws = new WeightMatrix[rows.length];
    float[][] expected = new float[rows.length][];
    float[][] actual = new float[rows.length][];
    float[] x = randoms(tokens * cols, 1);
    for (int m = 0; m < rows.length; m++) {
      ws[m] = matrix(dtype, rows[m], cols);
      expected[m] = new float[tokens * rows[m]];
      actual[m] = new float[tokens * rows[m]];
      reference.matmul(x, tokens, ws[m], expected[m]);
    }
    if (refusesQuantized(dtype, () -> backend.matmul(x, tokens, ws, actual))) {
      return;
    }
    backend.matmul(x, tokens, ws, actual);
    for (int m = 0; m < rows.length; m++) {
      assertClose(expected[m], actual[m], 1e-5, "matmul " + dtype + ", matrix " + m + " of " + rows.length);
    }
  }

  @ParameterizedTest(name = "f16 special values")
  @ValueSource(shorts = {0x0000, (short) 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x7c00, (short) 0xfc00, (short) 0xc000})
  void f16SpecialValuesWiden(short bits) {
    int cols = 64;
    MemorySegment data = arena.allocate(cols * 2L);
    for (int i = 0; i < cols; i++) {
      data.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, i == 5 ? bits : 0);
    }
    WeightMatrix w = new WeightMatrix("w", DType.F16, 1, cols, data);
    float[] x = new float[cols];
    x[5] = 1f;
    float[] out = new float[1];
    backend.matmul(x, 1, w, out);
    float expected = Float.float16ToFloat(bits);
    assertTrue(Float.compare(expected, out[0]) == 0 || expected == out[0],
        "f16 " + Integer.toHexString(bits & 0xffff) + " widened to " + out[0] + ", expected " + expected);
  }

  @ParameterizedTest(name = "rows={0} dim={1}")
  @CsvSource({"1, 64", "7, 33", "40, 128"})
  void rmsNorm(int rows, int dim) {
    float[] x = randoms(rows * dim, 3);
    float[] weight = randoms(dim, 1);
    float[] expected = new float[rows * dim];
    float[] actual = x.clone();
    reference.rmsNorm(x, expected, weight, 1e-6f, rows, dim);
    backend.rmsNorm(actual, actual, weight, 1e-6f, rows, dim);
    assertClose(expected, actual, 1e-5, "rmsNorm");
  }

  /**
   * Whole heads unscaled, and (Phi-4-mini's partial_rotary_factor, LongRoPE's attention factor) the
   * leading {@code rotaryDim} dimensions with cos and sin scaled, the rest passed through.
   */
  @ParameterizedTest(name = "headDim={0} rotaryDim={1} scale={2}")
  @CsvSource({"16, 16, 1", "64, 64, 1", "128, 128, 1", "18, 18, 1", "128, 96, 1.1902381", "96, 96, 1.1902381", "40, 10, 1"})
  void rope(int headDim, int rotaryDim, float scale) {
    if ((rotaryDim != headDim || scale != 1f) && backend instanceof dev.tandem.engine.cuda.CudaBackend) {
      assertThrows(UnsupportedOperationException.class,
          () -> backend.rope(new float[headDim], 1, 1, headDim, new int[1], new float[rotaryDim / 2], scale));
      return; // its kernel rotates whole heads unscaled; CudaTransformer refuses such models
    }
    int rows = 7;
    int heads = 3;
    float[] x = randoms(rows * heads * headDim, 1);
    int[] positions = new int[rows];
    for (int t = 0; t < rows; t++) {
      positions[t] = random.nextInt(5000);
    }
    float[] invFreq = new float[rotaryDim / 2];
    for (int i = 0; i < invFreq.length; i++) {
      invFreq[i] = (float) Math.pow(10_000, -2.0 * i / rotaryDim);
    }
    float[] expected = x.clone();
    float[] actual = x.clone();
    reference.rope(expected, rows, heads, headDim, positions, invFreq, scale);
    backend.rope(actual, rows, heads, headDim, positions, invFreq, scale);
    assertClose(expected, actual, 1e-5, "rope");
    for (int t = 0; t < rows * heads; t++) { // the unrotated tail of every head is untouched
      for (int d = rotaryDim; d < headDim; d++) {
        assertEquals(x[t * headDim + d], actual[t * headDim + d], "dimension " + d + " of head row " + t);
      }
    }
  }

  /**
   * A LoRA adapter's change to some rows of a batch (in any order; the others untouched): sizes
   * with vector tails, one decode row, and enough rows that a backend splits them over threads.
   */
  @ParameterizedTest(name = "rows={0} rank={1} in={2} out={3}")
  @CsvSource({"1, 8, 64, 96", "3, 16, 1024, 2048", "300, 32, 64, 160", "37, 4, 31, 17", "5, 6, 100, 70", "9, 5, 48, 40"})
  void addLowRank(int n, int rank, int inDim, int outDim) {
    int total = 2 * n + 1;
    int[] rows = new int[n];
    for (int i = 0; i < n; i++) {
      rows[i] = total - 1 - 2 * i; // the even rows but the first, last first
    }
    float[] before = randoms(total * outDim, 1);
    float[] actual = addLowRankAgainstReference(rows, total, rank, inDim, outDim, before);
    for (int t = 1; t < total; t += 2) { // the odd rows
      for (int o = 0; o < outDim; o++) {
        assertEquals(before[t * outDim + o], actual[t * outDim + o], "row " + t + " is not one of the rows");
      }
    }
  }

  /** As above on one sequence's rows (consecutive, as a slice's are), the rows before and after untouched. */
  @ParameterizedTest(name = "rows={0} rank={1} in={2} out={3}")
  @CsvSource({"4, 8, 64, 96", "9, 6, 100, 70", "300, 32, 64, 160", "7, 5, 31, 17", "64, 16, 1024, 2048"})
  void addLowRankOnConsecutiveRows(int n, int rank, int inDim, int outDim) {
    int total = n + 2;
    int[] rows = new int[n];
    for (int i = 0; i < n; i++) {
      rows[i] = 1 + i;
    }
    float[] before = randoms(total * outDim, 1);
    float[] actual = addLowRankAgainstReference(rows, total, rank, inDim, outDim, before);
    for (int o = 0; o < outDim; o++) {
      assertEquals(before[o], actual[o], "the row before");
      assertEquals(before[(total - 1) * outDim + o], actual[(total - 1) * outDim + o], "the row after");
    }
  }

  /**
   * {@code addLowRank} of random activations, A and B over {@code rows} of {@code total}, on the
   * backend and the reference from the same {@code before}: checks they agree, returns the backend's.
   * B sits before A in one array, both past other values (as an adapter's deltas share one).
   */
  private float[] addLowRankAgainstReference(int[] rows, int total, int rank, int inDim, int outDim, float[] before) {
    float[] in = randoms(total * inDim, 1);
    int bAt = 3;
    int aAt = bAt + rank * outDim + 5;
    float[] ab = randoms(aAt + rank * inDim + 7, 1);
    float[] expected = before.clone();
    float[] actual = before.clone();
    reference.addLowRank(in, inDim, rows, ab, aAt, bAt, rank, expected, outDim);
    backend.addLowRank(in, inDim, rows, ab, aAt, bAt, rank, actual, outDim);
    assertClose(expected, actual, 1e-5, "addLowRank");
    return actual;
  }

  @ParameterizedTest(name = "n={0}")
  @ValueSource(ints = {1, 31, 4096, 10_007})
  void siluMul(int n) {
    float[] gate = randoms(n, 4);
    float[] up = randoms(n, 1);
    float[] expected = gate.clone();
    float[] actual = gate.clone();
    reference.siluMul(expected, up, n);
    backend.siluMul(actual, up, n);
    assertClose(expected, actual, 1e-5, "siluMul");
  }

  /**
   * GeGLU's gate (Gemma): the scalar reference evaluates the tanh formula itself, so a backend's
   * rewriting of it is checked too, out to gates large enough that exp overflows (std 12). Errors
   * are relative to the largest output, but at least 1: far below zero GELU is a vanishing number
   * (e^{-50}) that every float formula gets only to a few parts in 10⁵. On a backend without the
   * kernel ({@link #geluKernel()} false), refused.
   */
  @ParameterizedTest(name = "n={0}")
  @ValueSource(ints = {1, 31, 4096, 10_007})
  void geluTanhMul(int n) {
    float[] gate = randoms(n, 12);
    float[] up = randoms(n, 1);
    float[] expected = gate.clone();
    float[] actual = gate.clone();
    if (!geluKernel()) {
      String e = assertThrows(UnsupportedOperationException.class, () -> backend.geluTanhMul(actual, up, n)).getMessage();
      assertTrue(e.contains("--compute cpu"), e);
      return;
    }
    reference.geluTanhMul(expected, up, n);
    backend.geluTanhMul(actual, up, n);
    assertClose(withOne(expected), withOne(actual), 1e-5, "geluTanhMul");
    assertEquals(-0.10042843f, single(-1.5f), 1e-6f, "gelu(-1.5), as PyTorch's gelu(approximate='tanh') gives it");
    assertEquals(1.9545977f, single(2f), 1e-6f, "gelu(2)");
    assertEquals(-0.0036373921f, single(-3f), 1e-9f, "gelu(-3)");
  }

  /** {@code a} and a 1 after it: a scale of at least 1 for {@link #assertClose}. */
  private static float[] withOne(float[] a) {
    float[] b = java.util.Arrays.copyOf(a, a.length + 1);
    b[a.length] = 1f;
    return b;
  }

  private float single(float x) {
    float[] g = {x};
    backend.geluTanhMul(g, new float[] {1f}, 1);
    return g[0];
  }

  /** Whether the backend has the GeGLU kernel (else it refuses, naming the CPU backend). */
  protected boolean geluKernel() {
    return true;
  }

  /** Both backends read the same stored entries, so 16-bit KV must agree as tightly as f32 does. */
  @ParameterizedTest(name = "heads={0} kvHeads={1} headDim={2} kv {3}")
  @CsvSource({"4, 2, 16, F32", "8, 8, 64, F32", "6, 2, 20, F32", "16, 4, 128, F32",
      "4, 2, 16, BF16", "8, 8, 64, BF16", "6, 2, 20, BF16", "16, 4, 128, BF16", "6, 2, 20, F16", "16, 4, 128, F16"})
  void attentionOverPagedCache(int heads, int kvHeads, int headDim, DType kvDtype) {
    int blockSize = 4;
    int blocks = 32;
    // Two sequences on scattered blocks sharing their first block; rows at various positions.
    int[] tableA = {3, 17, 5, 9, 22, 30};
    int[] tableB = {3, 11, 12, 29};
    // Single rows, a pair, then a prefill chunk of 19 consecutive positions (tiles of 8, 8 and 3).
    int[] positions = new int[8 + 19];
    int[][] tables = new int[positions.length][];
    int[] singles = {0, 3, 4, 13, 23, 2, 9, 15};
    for (int t = 0; t < 8; t++) {
      positions[t] = singles[t];
      tables[t] = t < 5 ? tableA : tableB;
    }
    for (int t = 8; t < positions.length; t++) {
      positions[t] = t - 8 + 2;
      tables[t] = tableA;
    }
    attendLikeTheReference(blocks, blockSize, positions, tables, heads, kvHeads, headDim, kvDtype);
  }

  /** A long prefill chunk: runs of rows longer than a tile, contexts of several hundred positions. */
  @ParameterizedTest(name = "heads={0} kvHeads={1} headDim={2} kv {3}")
  @CsvSource({"8, 4, 64, F32", "4, 2, 128, BF16", "6, 3, 32, F16", "4, 4, 40, BF16"})
  void attentionOverALongPrefillChunk(int heads, int kvHeads, int headDim, DType kvDtype) {
    int blockSize = 16;
    int[] table = {7, 2, 11, 0, 5, 13, 9, 1, 12, 4, 3, 8, 6, 10, 14, 15}; // 256 positions, scattered
    int rows = 150; // positions 97..246: a run of 64 rows, another of 64, then 22
    int[] positions = new int[rows];
    int[][] tables = new int[rows][];
    for (int t = 0; t < rows; t++) {
      positions[t] = 97 + t;
      tables[t] = table;
    }
    attendLikeTheReference(table.length, blockSize, positions, tables, heads, kvHeads, headDim, kvDtype);
  }

  /**
   * A sliding window (Mistral's): decode rows and a long prefill chunk whose rows' windows start
   * past position 0, at different places in a block, some rows still short of the window. On a
   * backend without windows ({@link #slidingWindow()} false), refused rather than computed without.
   */
  @ParameterizedTest(name = "heads={0} kvHeads={1} headDim={2} kv {3} window {4}")
  @CsvSource({"8, 4, 64, F32, 37", "4, 2, 128, BF16, 100", "6, 3, 32, F16, 64", "4, 4, 40, BF16, 21", "4, 2, 16, F32, 5"})
  void attentionOverASlidingWindow(int heads, int kvHeads, int headDim, DType kvDtype, int window) {
    int blockSize = 16;
    int[] table = {7, 2, 11, 0, 5, 13, 9, 1, 12, 4, 3, 8, 6, 10, 14, 15};
    int[] other = {15, 14, 3};
    int rows = 6 + 150;
    int[] positions = new int[rows];
    int[][] tables = new int[rows][];
    int[] singles = {0, window - 1, window, 47}; // short of the window, at it, one past, well past
    for (int t = 0; t < 4; t++) {
      positions[t] = Math.min(singles[t], 47);
      tables[t] = other;
    }
    positions[4] = 200; // two decode rows, each alone on its sequence
    tables[4] = table.clone();
    positions[5] = 255;
    tables[5] = table.clone();
    for (int t = 6; t < rows; t++) { // prefill: positions 6..155
      positions[t] = t;
      tables[t] = table;
    }
    if (!slidingWindow()) {
      float[] q = new float[rows * heads * headDim];
      AttentionBatch b = new AttentionBatch(q, q.clone(), rows, positions, tables, MemorySegment.NULL, MemorySegment.NULL, blockSize, heads,
          kvHeads, headDim, kvDtype, window);
      String e = assertThrows(UnsupportedOperationException.class, () -> backend.attention(b)).getMessage();
      assertTrue(e.contains("sliding window"), e);
      return;
    }
    attendLikeTheReference(table.length, blockSize, positions, tables, heads, kvHeads, headDim, kvDtype, window);
  }

  /**
   * Capped scores (Gemma 2's {@code attn_logit_softcapping}): decode rows alone and split into
   * chunks, a long prefill chunk through the micro-tiles (head sizes of whole panels) and through
   * the transposed gather (the others), with and without a window. A cap of 1.5 bends most scores
   * here, so attention without it is far off. On a backend without it, refused.
   */
  @ParameterizedTest(name = "heads={0} kvHeads={1} headDim={2} kv {3} window {4}")
  @CsvSource({"8, 4, 64, F32, 0", "4, 2, 128, BF16, 0", "6, 3, 20, F16, 0", "4, 2, 16, F32, 33", "8, 4, 64, BF16, 50"})
  void attentionWithCappedScores(int heads, int kvHeads, int headDim, DType kvDtype, int window) {
    int blockSize = 16;
    int[] table = {7, 2, 11, 0, 5, 13, 9, 1, 12, 4, 3, 8, 6, 10, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
    int rows = 3 + 90;
    int[] positions = new int[rows];
    int[][] tables = new int[rows][];
    positions[0] = 5; // decode rows: short, mid, long enough to split into chunks
    tables[0] = new int[] {31};
    positions[1] = 130;
    tables[1] = table.clone();
    positions[2] = 511;
    tables[2] = table.clone();
    for (int t = 3; t < rows; t++) { // prefill: positions 40..126
      positions[t] = 37 + t;
      tables[t] = table;
    }
    if (!cappedScores()) {
      float[] q = new float[rows * heads * headDim];
      AttentionBatch b = new AttentionBatch(q, q.clone(), rows, positions, tables, MemorySegment.NULL, MemorySegment.NULL, blockSize, heads,
          kvHeads, headDim, kvDtype, window, 1.5f);
      String e = assertThrows(UnsupportedOperationException.class, () -> backend.attention(b)).getMessage();
      assertTrue(e.contains("attn_logit_softcapping"), e);
      return;
    }
    attendLikeTheReference(table.length, blockSize, positions, tables, heads, kvHeads, headDim, kvDtype, window, 1.5f);
  }

  /** Whether the backend caps attention scores (else it refuses a batch that asks). */
  protected boolean cappedScores() {
    return true;
  }

  /** Whether the backend attends over a sliding window (else it refuses a row past one). */
  protected boolean slidingWindow() {
    return true;
  }

  private void attendLikeTheReference(int blocks, int blockSize, int[] positions, int[][] tables, int heads, int kvHeads, int headDim,
      DType kvDtype) {
    attendLikeTheReference(blocks, blockSize, positions, tables, heads, kvHeads, headDim, kvDtype, 0);
  }

  private void attendLikeTheReference(int blocks, int blockSize, int[] positions, int[][] tables, int heads, int kvHeads, int headDim,
      DType kvDtype, int window) {
    attendLikeTheReference(blocks, blockSize, positions, tables, heads, kvHeads, headDim, kvDtype, window, 0f);
  }

  /** A paged cache of {@code blocks} random blocks, random queries for {@code positions}: the backend's attention against the reference's. */
  private void attendLikeTheReference(int blocks, int blockSize, int[] positions, int[][] tables, int heads, int kvHeads, int headDim,
      DType kvDtype, int window, float softcap) {
    long entries = (long) blocks * blockSize * kvHeads * headDim;
    MemorySegment keys = arena.allocate(entries * kvDtype.bytes());
    MemorySegment values = arena.allocate(entries * kvDtype.bytes());
    for (long i = 0; i < entries; i++) {
      store(keys, kvDtype, i, (float) random.nextGaussian() * 2);
      store(values, kvDtype, i, (float) random.nextGaussian());
    }
    int rows = positions.length;
    float[] q = randoms(rows * heads * headDim, 1);
    float[] expected = new float[q.length];
    float[] actual = new float[q.length];
    reference.attention(
        new AttentionBatch(q, expected, rows, positions, tables, keys, values, blockSize, heads, kvHeads, headDim, kvDtype, window, softcap));
    backend.attention(
        new AttentionBatch(q, actual, rows, positions, tables, keys, values, blockSize, heads, kvHeads, headDim, kvDtype, window, softcap));
    assertClose(expected, actual, 1e-5, "attention");
  }

  private static void store(MemorySegment cache, DType dtype, long i, float v) {
    switch (dtype) {
      case F32 -> cache.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, v);
      case F16, BF16 -> cache.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, dtype.narrow(v));
    }
  }

  private WeightMatrix matrix(DType dtype, int rows, int cols) {
    if (dtype.quantized()) {
      return matrix(DType.F32, rows, cols).quantize(dtype, arena);
    }
    MemorySegment data = arena.allocate((long) rows * cols * dtype.bytes());
    for (int i = 0; i < rows * cols; i++) {
      float v = (float) random.nextGaussian();
      store(data, dtype, i, v);
    }
    return new WeightMatrix("w", dtype, rows, cols, data);
  }

  private float[] randoms(int n, double std) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) {
      a[i] = (float) (random.nextGaussian() * std);
    }
    return a;
  }

  /** Max absolute difference relative to the largest expected magnitude. */
  private void assertClose(float[] expected, float[] actual, double tolerance, String what) {
    double maxDiff = 0;
    double scale = 1e-30;
    for (int i = 0; i < expected.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(expected[i] - actual[i]));
      scale = Math.max(scale, Math.abs(expected[i]));
    }
    assertTrue(maxDiff / scale < tolerance,
        what + " on " + backend.name() + ": relative error " + maxDiff / scale + " (seed " + seed + ")");
  }
}
