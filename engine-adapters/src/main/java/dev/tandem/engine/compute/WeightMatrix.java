package dev.tandem.engine.compute;

import dev.tandem.engine.model.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.stream.IntStream;

/**
 * A weight matrix of {@code rows × cols} elements in row-major order, in its file's element type
 * (the bytes stay where they were mapped; nothing is converted up front) or quantized to {@link
 * DType#Q8_0} at load. Row {@code r} holds the weights of output feature {@code r}, as in PyTorch's
 * {@code nn.Linear}.
 *
 * <p>Q8_0's layout: the int8 values of row {@code r} at byte {@code r·cols}, then every scale (f16,
 * row {@code r}'s group {@code g} at {@code rows·cols + 2·(r·cols/32 + g)}). Within each 64 values
 * of a row, value {@code 16k + j} ({@code k < 4}, {@code j < 16}) is byte {@code k} of the row's
 * {@code j}-th int there, so one 16-lane int load holds four runs of 16 consecutive values, each
 * taken out by two shifts (see {@link #q8Byte}).
 */
public record WeightMatrix(String name, DType dtype, int rows, int cols, MemorySegment data) {
  private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
  private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;
  /** Values of one Q8_0 interleave: sixteen ints of four values. */
  public static final int Q8_CHUNK = 64;

  public WeightMatrix {
    if (dtype == DType.Q8_0 && cols % Q8_CHUNK != 0) {
      throw new IllegalArgumentException(name + ": q8_0 needs columns in multiples of " + Q8_CHUNK + ", not " + cols);
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
      case Q8_0 -> data.get(ValueLayout.JAVA_BYTE, (long) r * cols + q8Byte(c)) * q8Scale(r, c / DType.Q8_GROUP);
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
      case Q8_0 -> {
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

  /** Where column {@code c}'s int8 value sits within a Q8_0 row. */
  public static int q8Byte(int c) {
    int within = c % Q8_CHUNK;
    return c - within + 4 * (within % 16) + within / 16;
  }

  /** Byte offset of the f16 scale of row {@code r}'s group {@code g} in a Q8_0 matrix. */
  public long q8ScaleByte(int r, int g) {
    return (long) rows * cols + 2L * ((long) r * (cols / DType.Q8_GROUP) + g);
  }

  /** The scale of row {@code r}'s group {@code g} in a Q8_0 matrix. */
  public float q8Scale(int r, int g) {
    return Float.float16ToFloat(data.get(SHORT, q8ScaleByte(r, g)));
  }

  /** Whether {@link #quantizeQ8_0} can take this matrix (its rows come in whole interleaves). */
  public boolean quantizable() {
    return dtype != DType.Q8_0 && cols % Q8_CHUNK == 0;
  }

  /**
   * This matrix quantized as llama.cpp's {@code quantize_row_q8_0_ref} does, so a GGUF written from
   * it holds what {@code llama-quantize} would: per group of 32, d = max|w| / 127, each value
   * round(w / d) (half away from zero, through 1/d in f32), d kept as f16. Rows run in parallel on
   * the common pool; the result lives in {@code arena}.
   *
   * @throws IllegalArgumentException if the columns are not a multiple of 64, or a group's scale
   *     does not fit f16 (a weight beyond ±8.3 million)
   */
  public WeightMatrix quantizeQ8_0(Arena arena) {
    if (!quantizable()) {
      throw new IllegalArgumentException(name + ": cannot quantize " + rows + "×" + cols + " " + dtype + " to q8_0");
    }
    MemorySegment out = arena.allocate(DType.Q8_0.matrixBytes(rows, cols), 64);
    WeightMatrix q = new WeightMatrix(name, DType.Q8_0, rows, cols, out);
    IntStream.range(0, rows).parallel().forEach(r -> {
      float[] values = new float[cols];
      row(r, values, 0);
      byte[] bytes = new byte[cols];
      short[] scales = new short[cols / DType.Q8_GROUP];
      for (int g = 0; g < scales.length; g++) {
        int from = g * DType.Q8_GROUP;
        float amax = 0f;
        for (int c = from; c < from + DType.Q8_GROUP; c++) {
          amax = Math.max(amax, Math.abs(values[c]));
        }
        float d = amax / 127f;
        float id = d != 0f ? 1f / d : 0f;
        short scale = Float.floatToFloat16(d);
        if (Float.isInfinite(Float.float16ToFloat(scale))) {
          throw new IllegalArgumentException(name + ": row " + r + " has a weight of " + amax + ", beyond what q8_0's f16 scale holds");
        }
        scales[g] = scale;
        for (int c = from; c < from + DType.Q8_GROUP; c++) {
          float v = values[c] * id;
          long rounded = (long) Math.floor(Math.abs(v) + 0.5); // C's roundf: half away from zero
          bytes[q8Byte(c)] = (byte) (v < 0 ? -rounded : rounded);
        }
      }
      MemorySegment.copy(bytes, 0, out, ValueLayout.JAVA_BYTE, (long) r * cols, cols);
      MemorySegment.copy(scales, 0, out, SHORT, q.q8ScaleByte(r, 0), scales.length);
    });
    return q;
  }
}
