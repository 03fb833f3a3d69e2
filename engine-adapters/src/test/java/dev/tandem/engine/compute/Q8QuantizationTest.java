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
 * {@link WeightMatrix#quantize} to Q8_0: the values and scales ggml's {@code quantize_row_q8_0_ref}
 * gives (hand-computed groups), the interleaved layout the CPU kernels read, and refusals.
 */
class Q8QuantizationTest {
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
}
