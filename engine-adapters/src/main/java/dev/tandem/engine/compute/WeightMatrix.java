package dev.tandem.engine.compute;

import dev.tandem.engine.model.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.stream.IntStream;

/**
 * A weight matrix of {@code rows × cols} elements in row-major order, in its file's element type
 * (the bytes stay where they were mapped; nothing is converted up front) or quantized to {@link
 * DType#Q8_0} or {@link DType#Q4_0} at load. Row {@code r} holds the weights of output feature
 * {@code r}, as in PyTorch's {@code nn.Linear}.
 *
 * <p>Q8_0's layout: the int8 values of row {@code r} at byte {@code r·cols}, then every scale (f16,
 * row {@code r}'s group {@code g} at {@code rows·cols + 2·(r·cols/32 + g)}). Within each 64 values
 * of a row, value {@code 16k + j} ({@code k < 4}, {@code j < 16}) is byte {@code k} of the row's
 * {@code j}-th int there, so one 16-lane int load holds four runs of 16 consecutive values, each
 * taken out by two shifts (see {@link #q8Byte}).
 *
 * <p>Q4_0's layout: the 4-bit values of row {@code r} from byte {@code r·cols/2}, then every scale
 * as Q8_0's (from byte {@code rows·cols/2}). Within each 128 values of a row, value {@code 16k + j}
 * ({@code k < 8}, {@code j < 16}) is bits {@code 4k..4k+3} of the row's {@code j}-th int there, so
 * one 16-lane int load holds eight runs of 16 consecutive values. Each is stored as {@code q − 8} in
 * two's complement (ggml's q with its top bit flipped), so that the same two shifts as Q8_0's, a left
 * and an arithmetic right one, take it out signed (see {@link #q4Nibble}).
 */
public record WeightMatrix(String name, DType dtype, int rows, int cols, MemorySegment data) {
  private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
  private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
  /** Values of one Q8_0 interleave: sixteen ints of four values. */
  public static final int Q8_CHUNK = 64;
  /** Values of one Q4_0 interleave: sixteen ints of eight values. */
  public static final int Q4_CHUNK = 128;

  public WeightMatrix {
    if (dtype.quantized() && cols % chunk(dtype) != 0) {
      throw new IllegalArgumentException(name + ": " + dtype.shortName() + " needs columns in multiples of " + chunk(dtype) + ", not " + cols);
    }
    if (data.byteSize() != dtype.matrixBytes(rows, cols)) {
      throw new IllegalArgumentException(
          name + ": " + data.byteSize() + " bytes for " + rows + "×" + cols + " " + dtype);
    }
  }

  /** Element (r, c) as a float. */
  public float get(int r, int c) {
    long i = (long) r * cols + c;
    return switch (dtype) {
      case F32 -> data.getAtIndex(FLOAT, i);
      case F16 -> Float.float16ToFloat(data.getAtIndex(SHORT, i));
      case BF16 -> Float.intBitsToFloat(data.getAtIndex(SHORT, i) << 16);
      case Q8_0 -> data.get(ValueLayout.JAVA_BYTE, (long) r * cols + q8Byte(c)) * scale(r, c / DType.QUANT_GROUP);
      case Q4_0 -> q4Value(r, c) * scale(r, c / DType.QUANT_GROUP);
    };
  }

  /** Copies row {@code r} as floats into {@code out[offset, offset + cols)}. */
  public void row(int r, float[] out, int offset) {
    long first = (long) r * cols;
    switch (dtype) {
      case F32 -> MemorySegment.copy(data, FLOAT, first * Float.BYTES, out, offset, cols);
      case BF16 -> {
        for (int c = 0; c < cols; c++) {
          out[offset + c] = Float.intBitsToFloat(data.getAtIndex(SHORT, first + c) << 16);
        }
      }
      case F16 -> {
        for (int c = 0; c < cols; c++) {
          out[offset + c] = Float.float16ToFloat(data.getAtIndex(SHORT, first + c));
        }
      }
      case Q8_0, Q4_0 -> {
        for (int c = 0; c < cols; c++) {
          out[offset + c] = get(r, c);
        }
      }
    }
  }

  /** Bytes this matrix occupies. */
  public long byteSize() {
    return data.byteSize();
  }

  /** Values per interleave of a quantized type: {@link #Q8_CHUNK} or {@link #Q4_CHUNK}. */
  public static int chunk(DType quantized) {
    return switch (quantized) {
      case Q8_0 -> Q8_CHUNK;
      case Q4_0 -> Q4_CHUNK;
      default -> throw new IllegalArgumentException(quantized + " is not a quantized type");
    };
  }

  /** Where column {@code c}'s int8 value sits within a Q8_0 row. */
  public static int q8Byte(int c) {
    int within = c % Q8_CHUNK;
    return c - within + 4 * (within % 16) + within / 16;
  }

  /** Which 4-bit value of a Q4_0 row (counting two to a byte, the low half first) holds column {@code c}. */
  public static int q4Nibble(int c) {
    int within = c % Q4_CHUNK;
    return c - within + 8 * (within % 16) + within / 16;
  }

  /** Column {@code c} of Q4_0 row {@code r} before its scale: q − 8, in [−8, 7]. */
  private int q4Value(int r, int c) {
    int nibble = q4Nibble(c);
    byte b = data.get(ValueLayout.JAVA_BYTE, (long) r * cols / 2 + nibble / 2);
    return (b << (28 - 4 * (nibble & 1))) >> 28;
  }

  /** Byte offset of the f16 scale of row {@code r}'s group {@code g} in a quantized matrix. */
  public long scaleByte(int r, int g) {
    return dtype.valueBytes((long) rows * cols) + 2L * ((long) r * (cols / DType.QUANT_GROUP) + g);
  }

  /** The scale of row {@code r}'s group {@code g} in a quantized matrix. */
  public float scale(int r, int g) {
    return Float.float16ToFloat(data.get(SHORT, scaleByte(r, g)));
  }

  /** Whether {@link #quantize} can take this matrix to {@code to} (not quantized yet, its rows whole interleaves). */
  public boolean quantizable(DType to) {
    return !dtype.quantized() && cols % chunk(to) == 0;
  }

  /**
   * This matrix quantized as llama.cpp's reference quantizers do, so a GGUF written from it holds
   * what {@code llama-quantize} would. Per group of 32: for {@link DType#Q8_0}
   * ({@code quantize_row_q8_0_ref}) d = max|w| / 127 and each value round(w / d), half away from
   * zero; for {@link DType#Q4_0} ({@code quantize_row_q4_0_ref}) d = m / −8 with m the value of
   * largest magnitude, and each q = min(15, trunc(w / d + 8.5)). Both divide through 1/d in f32 and
   * keep d as f16. Rows run in parallel on the common pool; the result lives in {@code arena}.
   *
   * @throws IllegalArgumentException if the columns are not whole interleaves ({@link #chunk}), or a
   *     group's scale does not fit f16 (a weight beyond ±8.3 million for Q8_0, ±524,000 for Q4_0)
   */
  public WeightMatrix quantize(DType to, Arena arena) {
    if (!to.quantized() || !quantizable(to)) {
      throw new IllegalArgumentException(name + ": cannot quantize " + rows + "×" + cols + " " + dtype + " to " + to.shortName());
    }
    MemorySegment out = arena.allocate(to.matrixBytes(rows, cols), 64);
    WeightMatrix q = new WeightMatrix(name, to, rows, cols, out);
    int valueBytes = (int) to.valueBytes(cols);
    IntStream.range(0, rows).parallel().forEach(r -> {
      float[] values = new float[cols];
      row(r, values, 0);
      byte[] bytes = new byte[valueBytes];
      short[] scales = new short[cols / DType.QUANT_GROUP];
      for (int g = 0; g < scales.length; g++) {
        int from = g * DType.QUANT_GROUP;
        float amax = 0f;
        float max = 0f;
        for (int c = from; c < from + DType.QUANT_GROUP; c++) {
          if (amax < Math.abs(values[c])) {
            amax = Math.abs(values[c]);
            max = values[c];
          }
        }
        float d = to == DType.Q8_0 ? amax / 127f : max / -8f;
        float id = d != 0f ? 1f / d : 0f;
        short scale = Float.floatToFloat16(d);
        if (Float.isInfinite(Float.float16ToFloat(scale))) {
          throw new IllegalArgumentException(name + ": row " + r + " has a weight of " + amax + ", beyond what " + to.shortName() + "'s f16 scale holds");
        }
        scales[g] = scale;
        for (int c = from; c < from + DType.QUANT_GROUP; c++) {
          float v = values[c] * id;
          if (to == DType.Q8_0) {
            long rounded = (long) Math.floor(Math.abs(v) + 0.5); // C's roundf: half away from zero
            bytes[q8Byte(c)] = (byte) (v < 0 ? -rounded : rounded);
          } else {
            int stored = (Math.min(15, (int) (v + 8.5f)) - 8) & 0xf; // as C's (int8_t) cast truncates, then q − 8
            int nibble = q4Nibble(c);
            bytes[nibble / 2] |= (byte) (stored << (4 * (nibble & 1)));
          }
        }
      }
      MemorySegment.copy(bytes, 0, out, ValueLayout.JAVA_BYTE, (long) r * valueBytes, valueBytes);
      MemorySegment.copy(scales, 0, out, SHORT, q.scaleByte(r, 0), scales.length);
    });
    return q;
  }
}
