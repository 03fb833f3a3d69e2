package dev.tandem.engine.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * One named tensor: its element type, shape (row-major) and bytes. The bytes belong to the
 * {@link SafetensorsFile} (or arena) that produced them and live as long as it is open.
 */
public record Tensor(String name, DType dtype, long[] shape, MemorySegment data, String file) {
  private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
  private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED;

  public long elementCount() {
    long n = 1;
    for (long d : shape) {
      n *= d;
    }
    return n;
  }

  public String shapeString() {
    return Arrays.toString(shape);
  }

  /** Element {@code index} as a float. */
  public float get(long index) {
    return switch (dtype) {
      case F32 -> data.getAtIndex(FLOAT, index);
      case F16 -> Float.float16ToFloat(data.getAtIndex(SHORT, index));
      case BF16 -> Float.intBitsToFloat(data.getAtIndex(SHORT, index) << 16);
      case Q8_0, Q4_0 -> throw new IllegalStateException("a file's tensor is never " + dtype.shortName());
    };
  }

  /** The whole tensor as floats (for small tensors: norms and biases). */
  public float[] toFloats() {
    long n = elementCount();
    if (n > Integer.MAX_VALUE - 8) {
      throw new IllegalStateException("tensor " + name + " is too large to copy to the heap");
    }
    float[] out = new float[(int) n];
    for (int i = 0; i < out.length; i++) {
      out[i] = get(i);
    }
    return out;
  }
}
