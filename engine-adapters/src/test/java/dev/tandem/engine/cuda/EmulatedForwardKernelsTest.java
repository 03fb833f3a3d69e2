package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tandem.engine.compute.WeightMatrix;
import dev.tandem.engine.model.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The kernels only the device forward pass uses ({@code CudaTransformer}), through {@link
 * CudaKernels} on the {@link EmulatedGpu}, against plain Java:
 * embedding rows, residual and bias adds, KV writes (the 16-bit rounding bit for bit as {@link
 * DType#narrow} writes the host cache, NaN and infinities included), block copies, row gathers.
 */
@Tag("emulation")
class EmulatedForwardKernelsTest {
  private final long seed = System.nanoTime();
  private final Random random = new Random(seed);
  private Arena arena;
  private CudaKernels kernels;

  @BeforeEach
  void open() {
    kernels = new CudaKernels(TestGpus.emulated());
    arena = Arena.ofConfined();
  }

  /** On the emulated GPU a device pointer is the host address. */
  private static Gpu.Ptr at(MemorySegment s) {
    return new Gpu.Ptr(s.address());
  }

  private Gpu.Ptr floats(float[] a) {
    MemorySegment s = arena.allocate((long) a.length * Float.BYTES, 16);
    MemorySegment.copy(a, 0, s, ValueLayout.JAVA_FLOAT, 0, a.length);
    return at(s);
  }

  private Gpu.Ptr ints(int[] a) {
    MemorySegment s = arena.allocate((long) a.length * Integer.BYTES, 16);
    MemorySegment.copy(a, 0, s, ValueLayout.JAVA_INT, 0, a.length);
    return at(s);
  }

  @AfterEach
  void close() {
    if (arena != null) {
      arena.close();
    }
  }

  @ParameterizedTest
  @EnumSource(value = DType.class, names = {"F32", "F16", "BF16"}) // Q8_0: CPU only
  void embeddingRowsWidenAsTheHostReadsThem(DType dtype) {
    int vocab = 50;
    int hidden = 24;
    MemorySegment table = arena.allocate((long) vocab * hidden * dtype.bytes(), 16);
    for (int i = 0; i < vocab * hidden; i++) {
      store(table, dtype, i, (float) random.nextGaussian());
    }
    WeightMatrix w = new WeightMatrix("embed", dtype, vocab, hidden, table);
    int[] ids = {3, 49, 0, 3, 17};
    MemorySegment out = arena.allocate((long) ids.length * hidden * Float.BYTES, 16);
    kernels.embed(ints(ids), ids.length, at(table), dtype, hidden, at(out));
    float[] expected = new float[ids.length * hidden];
    for (int t = 0; t < ids.length; t++) {
      w.row(ids[t], expected, t * hidden);
    }
    assertArrayEquals(expected, out.toArray(ValueLayout.JAVA_FLOAT), "seed " + seed);
  }

  @Test
  void addIsAResidualOrABiasPerRow() {
    int rows = 7;
    int width = 33;
    float[] a = randoms(rows * width);
    float[] residual = randoms(rows * width);
    float[] bias = randoms(width);
    Gpu.Ptr da = floats(a);
    long n = (long) rows * width;
    kernels.add(da, floats(residual), n, (int) n);
    kernels.add(da, floats(bias), n, width);
    float[] expected = new float[a.length];
    for (int i = 0; i < a.length; i++) {
      expected[i] = a[i] + residual[i] + bias[i % width];
    }
    float[] got = MemorySegment.ofAddress(da.address()).reinterpret((long) a.length * Float.BYTES).toArray(ValueLayout.JAVA_FLOAT);
    assertArrayEquals(expected, got, "seed " + seed);
  }

  @ParameterizedTest
  @EnumSource(value = DType.class, names = {"F32", "F16", "BF16"}) // Q8_0: CPU only
  void kvWritesStoreTheHostsBitsInBothCaches(DType dtype) {
    int kvDim = 20;
    int blockSize = 4;
    int blocks = 6;
    int rows = 5;
    float[] k = randoms(rows * kvDim);
    float[] v = randoms(rows * kvDim);
    // Values that round differently or not at all: ties, NaN, infinities, subnormals, past f16's range.
    float[] special = {Float.NaN, -Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 1e-40f, -0f,
        Float.intBitsToFloat(0x3f808000), Float.intBitsToFloat(0x3f818000), 70000f, 1.00048828125f, Float.MAX_VALUE};
    System.arraycopy(special, 0, k, 0, special.length);
    int[] slots = {5, 0, 23, 12, 13}; // block × 4 + slot, scattered
    long entries = (long) blocks * blockSize * kvDim;
    MemorySegment keys = arena.allocate(entries * dtype.bytes(), 16);
    MemorySegment values = arena.allocate(entries * dtype.bytes(), 16);
    MemorySegment hostKeys = arena.allocate(entries * dtype.bytes(), 16);
    MemorySegment hostValues = arena.allocate(entries * dtype.bytes(), 16);
    kernels.kvWrite(floats(k), floats(v), ints(slots), rows, kvDim, dtype, at(keys), at(values), at(hostKeys), at(hostValues));
    MemorySegment expectedKeys = arena.allocate(entries * dtype.bytes(), 16);
    MemorySegment expectedValues = arena.allocate(entries * dtype.bytes(), 16);
    for (int t = 0; t < rows; t++) {
      for (int i = 0; i < kvDim; i++) {
        long at = (long) slots[t] * kvDim + i;
        store(expectedKeys, dtype, at, k[t * kvDim + i]);
        store(expectedValues, dtype, at, v[t * kvDim + i]);
      }
    }
    byte[] want = expectedKeys.toArray(ValueLayout.JAVA_BYTE);
    assertArrayEquals(want, keys.toArray(ValueLayout.JAVA_BYTE), "device keys, seed " + seed);
    assertArrayEquals(want, hostKeys.toArray(ValueLayout.JAVA_BYTE), "host keys, seed " + seed);
    assertArrayEquals(expectedValues.toArray(ValueLayout.JAVA_BYTE), values.toArray(ValueLayout.JAVA_BYTE), "device values");
    assertArrayEquals(expectedValues.toArray(ValueLayout.JAVA_BYTE), hostValues.toArray(ValueLayout.JAVA_BYTE), "host values");
  }

  @Test
  void kvWritesWithoutAHostCacheTouchOnlyTheDevice() {
    int kvDim = 8;
    MemorySegment keys = arena.allocate(64L * kvDim * 2, 16);
    MemorySegment values = arena.allocate(64L * kvDim * 2, 16);
    float[] k = randoms(kvDim);
    kernels.kvWrite(floats(k), floats(k), ints(new int[] {9}), 1, kvDim, DType.BF16, at(keys), at(values), null, null);
    assertEquals(DType.BF16.narrow(k[3]), keys.getAtIndex(ValueLayout.JAVA_SHORT, 9L * kvDim + 3));
  }

  @Test
  void blockCopiesMoveExactlyTheListedBlocks() {
    long blockBytes = 4 * 20 * 2; // 4 slots × kvDim 20 × bf16
    int blocks = 8;
    MemorySegment src = arena.allocate(blocks * blockBytes, 16);
    MemorySegment dst = arena.allocate(blocks * blockBytes, 16);
    for (long i = 0; i < src.byteSize(); i++) {
      src.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
    }
    int[] listed = {6, 1, 2};
    kernels.copyBlocks(at(src), at(dst), ints(listed), listed.length, blockBytes);
    for (int b = 0; b < blocks; b++) {
      boolean copied = b == 6 || b == 1 || b == 2;
      byte[] got = dst.asSlice(b * blockBytes, blockBytes).toArray(ValueLayout.JAVA_BYTE);
      byte[] want = copied ? src.asSlice(b * blockBytes, blockBytes).toArray(ValueLayout.JAVA_BYTE) : new byte[(int) blockBytes];
      assertArrayEquals(want, got, "block " + b);
    }
  }

  @Test
  void gatherRowsPicksTheLastTokensOfSlices() {
    int hidden = 40;
    float[] x = randoms(9 * hidden);
    int[] rows = {8, 2, 5};
    MemorySegment out = arena.allocate((long) rows.length * hidden * Float.BYTES, 16);
    kernels.gatherRows(floats(x), ints(rows), rows.length, hidden, at(out));
    float[] expected = new float[rows.length * hidden];
    for (int j = 0; j < rows.length; j++) {
      System.arraycopy(x, rows[j] * hidden, expected, j * hidden, hidden);
    }
    assertArrayEquals(expected, out.toArray(ValueLayout.JAVA_FLOAT));
  }

  private static void store(MemorySegment s, DType dtype, long i, float v) {
    switch (dtype) {
      case F32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
      case F16, BF16 -> s.setAtIndex(ValueLayout.JAVA_SHORT, i, dtype.narrow(v));
    }
  }

  private float[] randoms(int n) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) {
      a[i] = (float) random.nextGaussian();
    }
    return a;
  }
}
