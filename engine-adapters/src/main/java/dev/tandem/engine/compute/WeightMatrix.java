package dev.tandem.engine.compute;

import dev.tandem.engine.model.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A weight matrix of {@code rows × cols} elements in row-major order, in its file's element type
 * (the bytes stay where they were mapped; nothing is converted up front). Row {@code r} holds the
 * weights of output feature {@code r}, as in PyTorch's {@code nn.Linear}.
 */
public record WeightMatrix(String name, DType dtype, int rows, int cols, MemorySegment data) {
  private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
  private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

  public WeightMatrix {
    if (data.byteSize() != (long) rows * cols * dtype.bytes()) {
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
    };
  }

  /** Copies row {@code r} as floats into {@code out[offset, offset + cols)}. */
  public void row(int r, float[] out, int offset) {
    for (int c = 0; c < cols; c++) {
      out[offset + c] = get(r, c);
    }
  }

  /** Bytes this matrix occupies. */
  public long byteSize() {
    return data.byteSize();
  }
}
