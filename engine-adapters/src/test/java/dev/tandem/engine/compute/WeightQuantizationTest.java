package dev.tandem.engine.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.model.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link WeightMatrix#quantize} to Q8_0 and to Q4_0: the values and scales ggml's {@code
 * quantize_row_q8_0_ref} and {@code quantize_row_q4_0_ref} give (hand-computed groups), the
 * interleaved layouts the CPU kernels read, and refusals.
 */
class WeightQuantizationTest {
  private final Arena arena = Arena.ofShared();

  @AfterEach
  void close() {
    arena.close();
  }

  private WeightMatrix f32(int rows, int cols, float[] values) {
    MemorySegment data = arena.allocate((long) rows * cols * 4);
    MemorySegment.copy(values, 0, data, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, values.length);
    return new WeightMatrix("w", DType.F32, rows, cols, data);
  }

  @Test
  void aGroupIsScaledByItsLargestMagnitudeAndRoundedHalfAwayFromZero() {
    float[] v = new float[64];
    // Group 0: largest magnitude 127, so d = 1 and the values are rounded as they are.
    v[0] = 127f;
    v[1] = 2.5f; // a tie: away from zero, 3 (round-half-even would give 2)
    v[2] = -2.5f; // -3
    v[3] = 0.49f; // 0
    v[4] = -126.6f; // -127
    // Group 1: largest magnitude 0.5, d = 0.5 / 127, stored as f16.
    v[32] = -0.5f;
    v[33] = 0.25f; // 0.25 · 254 = 63.5: 64
    WeightMatrix q = f32(1, 64, v).quantize(DType.Q8_0, arena);

    assertEquals(DType.Q8_0, q.dtype());
    assertEquals(64 + 2 * 2, q.byteSize(), "64 int8 values and two f16 scales");
    assertEquals(1f, q.scale(0, 0));
    assertEquals(127f, q.get(0, 0));
    assertEquals(3f, q.get(0, 1));
    assertEquals(-3f, q.get(0, 2));
    assertEquals(0f, q.get(0, 3));
    assertEquals(-127f, q.get(0, 4));
    float d = Float.float16ToFloat(Float.floatToFloat16(0.5f / 127f));
    assertEquals(d, q.scale(0, 1));
    assertEquals(-127 * d, q.get(0, 32));
    assertEquals(64 * d, q.get(0, 33));
    assertEquals(0f, q.get(0, 34));
  }

  @Test
  void anAllZeroGroupHasAZeroScaleAndZeroValues() {
    WeightMatrix q = f32(2, 64, new float[128]).quantize(DType.Q8_0, arena);
    for (int r = 0; r < 2; r++) {
      assertEquals(0f, q.scale(r, 0));
      for (int c = 0; c < 64; c++) {
        assertEquals(0f, q.get(r, c));
      }
    }
  }

  @Test
  void valuesAreInterleavedSoThatOneIntLoadHoldsFourRunsOfSixteen() {
    assertEquals(0, WeightMatrix.q8Byte(0));
    assertEquals(4, WeightMatrix.q8Byte(1)); // value j of run 0: byte 0 of int j
    assertEquals(1, WeightMatrix.q8Byte(16)); // run 1 in each int's byte 1
    assertEquals(4 * 15 + 3, WeightMatrix.q8Byte(63));
    assertEquals(64 + 4 * 2 + 1, WeightMatrix.q8Byte(64 + 18)); // the next interleave
    // And the stored bytes sit where q8Byte says: value c of a row of 1..64 (d = 1/2).
    float[] v = new float[128];
    for (int c = 0; c < 128; c++) {
      v[c] = (c % 32) + 32 * (c / 32 % 2) + 1; // two groups of 32 per interleave: largest 32 and 64
    }
    WeightMatrix q = f32(1, 128, v).quantize(DType.Q8_0, arena);
    for (int c = 0; c < 128; c++) {
      byte stored = q.data().get(ValueLayout.JAVA_BYTE, WeightMatrix.q8Byte(c));
      assertEquals(Math.round(v[c] * 127 / (c / 32 % 2 == 0 ? 32 : 64)), stored, "column " + c);
    }
  }

  @Test
  void dequantizedValuesAreWithinHalfAStepOfTheOriginals() {
    Random random = new Random(7);
    int rows = 5;
    int cols = 192;
    float[] v = new float[rows * cols];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (random.nextGaussian() * 0.02);
    }
    WeightMatrix q = f32(rows, cols, v).quantize(DType.Q8_0, arena);
    for (int r = 0; r < rows; r++) {
      for (int c = 0; c < cols; c++) {
        float d = q.scale(r, c / 32);
        // half a step, plus what rounding d to f16 moves the largest value (2^-11 of 127 steps)
        assertTrue(Math.abs(q.get(r, c) - v[r * cols + c]) <= d * (0.5 + 127.0 / 2048), "(" + r + ", " + c + ")");
      }
    }
  }

  @Test
  void refusesWhatItCannotHold() {
    assertFalse(f32(1, 96, new float[96]).quantizable(DType.Q8_0));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> f32(1, 96, new float[96]).quantize(DType.Q8_0, arena));
    assertTrue(e.getMessage().contains("w: cannot quantize 1×96"), e.getMessage());
    float[] huge = new float[64];
    huge[5] = 1e7f;
    e = assertThrows(IllegalArgumentException.class, () -> f32(1, 64, huge).quantize(DType.Q8_0, arena));
    assertTrue(e.getMessage().contains("beyond what q8_0's f16 scale holds"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new WeightMatrix("w", DType.Q8_0, 1, 32, arena.allocate(34)));
    assertTrue(e.getMessage().contains("multiples of 64"), e.getMessage());
  }

  // ---- Q4_0 ----

  @Test
  void aGroupIsScaledByItsLargestValueOverMinusEightAndTruncatedFromHalfAStepUp() {
    float[] v = new float[128];
    // Group 0: the largest magnitude is 8, so d = 8 / -8 = -1 and q = trunc(-w + 8.5), clamped to 15.
    v[0] = 8f; // q 0: (0 - 8) · -1 = 8
    v[1] = -7f; // q 15: -7
    v[2] = 2.5f; // -2.5 + 8.5 = 6 exactly: q 6, 2
    v[3] = 2.6f; // 5.9 truncates to 5: 3
    v[4] = 2.4f; // 6.1: 6, 2
    v[5] = -8f; // as large as 8 but later, so not the max: 16.5 → 16, clamped to 15: -7
    // Group 1: the largest magnitude is -0.5, d = 0.0625 (exact in f16), q = trunc(16·w + 8.5).
    v[32] = -0.5f; // q 0: -0.5
    v[33] = 0.25f; // 12.5 → 12: 0.25
    v[34] = 0.47f; // 16.02 → clamped to 15: 0.4375
    v[35] = -0.03f; // 8.02 → 8: 0
    v[36] = 0.03f; // 8.98 → 8: 0
    v[37] = 0.04f; // 9.14 → 9: 0.0625
    WeightMatrix q = f32(1, 128, v).quantize(DType.Q4_0, arena);

    assertEquals(DType.Q4_0, q.dtype());
    assertEquals(64 + 4 * 2, q.byteSize(), "128 4-bit values and four f16 scales");
    assertEquals(-1f, q.scale(0, 0));
    float[] group0 = {8f, -7f, 2f, 3f, 2f, -7f, 0f};
    for (int c = 0; c < group0.length; c++) {
      assertEquals(group0[c], q.get(0, c), 0f, "column " + c); // 0 · -1 is -0
    }
    assertEquals(0.0625f, q.scale(0, 1));
    float[] group1 = {-0.5f, 0.25f, 0.4375f, 0f, 0f, 0.0625f, 0f};
    for (int c = 0; c < group1.length; c++) {
      assertEquals(group1[c], q.get(0, 32 + c), "column " + (32 + c));
    }
    assertEquals(0f, q.scale(0, 2), 0f, "an all-zero group (-0 as ggml stores it: 0 / -8)");
    assertEquals(0f, q.get(0, 70), 0f);
  }

  @Test
  void valuesAreInterleavedSoThatOneIntLoadHoldsEightRunsOfSixteen() {
    assertEquals(0, WeightMatrix.q4Nibble(0));
    assertEquals(8, WeightMatrix.q4Nibble(1)); // value j of run 0: the low nibble of int j
    assertEquals(1, WeightMatrix.q4Nibble(16)); // run 1 in each int's second nibble
    assertEquals(8 * 15 + 7, WeightMatrix.q4Nibble(127));
    assertEquals(128 + 8 * 2 + 1, WeightMatrix.q4Nibble(128 + 18)); // the next interleave
    // And the stored nibbles sit where q4Nibble says, as q - 8: whole values in [-8, 7], each
    // group's first -8 (its largest magnitude, so d = 1 and q - 8 is the value itself).
    float[] v = new float[256];
    for (int c = 0; c < 256; c++) {
      v[c] = c % 32 == 0 ? -8f : (c * 7 % 16) - 8;
    }
    WeightMatrix q = f32(1, 256, v).quantize(DType.Q4_0, arena);
    for (int c = 0; c < 256; c++) {
      int nibble = WeightMatrix.q4Nibble(c);
      byte b = q.data().get(ValueLayout.JAVA_BYTE, nibble / 2);
      assertEquals((int) v[c], (b << (28 - 4 * (nibble & 1))) >> 28, "column " + c);
      assertEquals(v[c], q.get(0, c), "column " + c + " dequantized");
    }
  }

  @Test
  void dequantizedValuesAreWithinHalfAStepOfTheOriginalsButTheClampedTop() {
    Random random = new Random(7);
    int rows = 5;
    int cols = 384;
    float[] v = new float[rows * cols];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (random.nextGaussian() * 0.02);
    }
    WeightMatrix q = f32(rows, cols, v).quantize(DType.Q4_0, arena);
    int clamped = 0;
    for (int r = 0; r < rows; r++) {
      for (int c = 0; c < cols; c++) {
        float d = Math.abs(q.scale(r, c / 32));
        float err = Math.abs(q.get(r, c) - v[r * cols + c]);
        // half a step, plus what rounding d to f16 moves the largest value (2^-11 of 8 steps); a
        // value of the other sign as large as 8 steps is clamped to 7 (q at most 15)
        if (err > d * (0.5 + 8.0 / 2048)) {
          clamped++;
          assertTrue(err <= d * (1 + 8.0 / 2048) && Math.abs(v[r * cols + c]) > 7.5 * d, "(" + r + ", " + c + ")");
        }
      }
    }
    assertTrue(clamped < rows * cols / 100, clamped + " values clamped");
  }

  @Test
  void q4_0RefusesWhatItCannotHold() {
    assertFalse(f32(1, 192, new float[192]).quantizable(DType.Q4_0));
    assertTrue(f32(1, 192, new float[192]).quantizable(DType.Q8_0), "a row of 192 is whole Q8_0 interleaves, not Q4_0's");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> f32(1, 192, new float[192]).quantize(DType.Q4_0, arena));
    assertTrue(e.getMessage().contains("w: cannot quantize 1×192 F32 to q4_0"), e.getMessage());
    float[] huge = new float[128];
    huge[5] = 1e6f; // d = 125,000: beyond f16's 65,504
    e = assertThrows(IllegalArgumentException.class, () -> f32(1, 128, huge).quantize(DType.Q4_0, arena));
    assertTrue(e.getMessage().contains("beyond what q4_0's f16 scale holds"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new WeightMatrix("w", DType.Q4_0, 1, 64, arena.allocate(36)));
    assertTrue(e.getMessage().contains("q4_0 needs columns in multiples of 128"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> f32(1, 128, new float[128]).quantize(DType.BF16, arena));
    assertTrue(e.getMessage().contains("to bf16"), e.getMessage());
  }
}
