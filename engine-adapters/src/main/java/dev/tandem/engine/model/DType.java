package dev.tandem.engine.model;

/**
 * Element types of weight tensors (as safetensors names them) and of KV cache entries, and the
 * types weights take only when Tandem quantizes them at load ({@link #Q8_0}, {@link #Q4_0}).
 */
public enum DType {
  F32(32),
  F16(16),
  BF16(16),
  /**
   * llama.cpp's Q8_0, weights only: each run of 32 values in a row is int8 values times one f16
   * scale (the run's largest magnitude ÷ 127). {@link #bytes} counts the int8 value; the scales
   * add 2 bytes per 32 ({@link #matrixBytes}). Never a KV cache type, never read from a file.
   */
  Q8_0(8),
  /**
   * llama.cpp's Q4_0, weights only: each run of 32 values in a row is 4-bit values q ∈ [0, 15] read
   * as (q − 8) times one f16 scale (the run's value of largest magnitude ÷ −8). Half a byte a value;
   * the scales add 2 bytes per 32 ({@link #matrixBytes}). Never a KV cache type, never read from a
   * file.
   */
  Q4_0(4);

  /** Values per {@link #Q8_0} or {@link #Q4_0} scale. */
  public static final int QUANT_GROUP = 32;

  private final int bits;

  DType(int bits) {
    this.bits = bits;
  }

  /**
   * Bytes of one value.
   *
   * @throws IllegalStateException for {@link #Q4_0}, two values to a byte
   */
  public int bytes() {
    if (bits < 8) {
      throw new IllegalStateException(this + " holds two values in a byte");
    }
    return bits / 8;
  }

  /** Whether this is a type weights are quantized to at load (values in groups with a scale each). */
  public boolean quantized() {
    return this == Q8_0 || this == Q4_0;
  }

  /** Bytes of {@code count} values of this type (a quantized type's values alone, without their scales). */
  public long valueBytes(long count) {
    return count * bits / 8;
  }

  /** Bytes of a {@code rows × cols} matrix of this type (quantized: its values, then its scales). */
  public long matrixBytes(int rows, int cols) {
    long values = valueBytes((long) rows * cols);
    return quantized() ? values + (long) rows * (cols / QUANT_GROUP) * Short.BYTES : values;
  }

  /** The safetensors dtype, or null if Tandem cannot compute with it. */
  static DType fromSafetensors(String name) {
    return switch (name) {
      case "F32" -> F32;
      case "F16" -> F16;
      case "BF16" -> BF16;
      default -> null;
    };
  }

  /** The {@code torch_dtype} spelling in config.json. */
  public String torchName() {
    return switch (this) {
      case F32 -> "float32";
      case F16 -> "float16";
      case BF16 -> "bfloat16";
      case Q8_0, Q4_0 -> throw new IllegalStateException(shortName() + " is not a torch dtype");
    };
  }

  public static DType fromTorchName(String name) {
    return switch (name) {
      case "float32" -> F32;
      case "float16" -> F16;
      case "bfloat16" -> BF16;
      default -> throw new IllegalArgumentException("unknown dtype '" + name + "' (float32, float16, bfloat16)");
    };
  }

  /**
   * {@code v} as this 16-bit type's bits, rounding to nearest even as PyTorch converts (a NaN stays
   * a quiet NaN of its sign).
   *
   * @throws IllegalStateException for f32, which has no 16-bit form
   */
  public short narrow(float v) {
    return switch (this) {
      case F16 -> Float.floatToFloat16(v);
      case BF16 -> {
        int bits = Float.floatToRawIntBits(v);
        yield Float.isNaN(v) ? (short) ((bits >>> 16) | 0x40) : (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
      }
      case F32, Q8_0, Q4_0 -> throw new IllegalStateException(this + " has no 16-bit form");
    };
  }

  /** {@code v} rounded to this type (as {@link #narrow} rounds) and widened back; f32 unchanged. */
  public float round(float v) {
    return switch (this) {
      case F32 -> v;
      case F16 -> Float.float16ToFloat(narrow(v));
      case BF16 -> Float.intBitsToFloat(narrow(v) << 16);
      case Q8_0, Q4_0 -> throw new IllegalStateException(shortName() + " rounds a group, not a value");
    };
  }

  /** The short name {@code --kv-cache-dtype} takes and workers report: f32, f16, bf16. */
  public String shortName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  /** A short name (f32, f16, bf16) as {@link #shortName} writes it. */
  public static DType fromShortName(String name) {
    return switch (name) {
      case "f32" -> F32;
      case "f16" -> F16;
      case "bf16" -> BF16;
      default -> throw new IllegalArgumentException("unknown KV cache dtype '" + name + "' (auto, f32, bf16, f16)");
    };
  }

  /** {@code --quantization}'s value: null for "none", {@link #Q8_0} for "q8_0", {@link #Q4_0} for "q4_0". */
  public static DType fromQuantizationName(String name) {
    return switch (name) {
      case "none" -> null;
      case "q8_0" -> Q8_0;
      case "q4_0" -> Q4_0;
      default -> throw new IllegalArgumentException("unknown --quantization '" + name + "' (none, q8_0, q4_0: the weights are"
          + " quantized at load; pre-quantized checkpoints such as AWQ or GPTQ are not read)");
    };
  }
}
