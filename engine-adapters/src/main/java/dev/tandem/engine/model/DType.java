package dev.tandem.engine.model;

/**
 * Element types of weight tensors (as safetensors names them) and of KV cache entries, and the one
 * type weights take only when Tandem quantizes them at load ({@link #Q8_0}).
 */
public enum DType {
  F32(4),
  F16(2),
  BF16(2),
  /**
   * llama.cpp's Q8_0, weights only: each run of 32 values in a row is int8 values times one f16
   * scale (the run's largest magnitude ÷ 127). {@link #bytes} counts the int8 value; the scales
   * add 2 bytes per 32 ({@link #matrixBytes}). Never a KV cache type, never read from a file.
   */
  Q8_0(1);

  /** Values per {@link #Q8_0} scale. */
  public static final int Q8_GROUP = 32;

  private final int bytes;

  DType(int bytes) {
    this.bytes = bytes;
  }

  public int bytes() {
    return bytes;
  }

  /** Bytes of a {@code rows × cols} matrix of this type ({@link #Q8_0}: its values, then its scales). */
  public long matrixBytes(int rows, int cols) {
    long values = (long) rows * cols * bytes;
    return this == Q8_0 ? values + (long) rows * (cols / Q8_GROUP) * Short.BYTES : values;
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
      case Q8_0 -> throw new IllegalStateException("q8_0 is not a torch dtype");
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
      case F32, Q8_0 -> throw new IllegalStateException(this + " has no 16-bit form");
    };
  }

  /** {@code v} rounded to this type (as {@link #narrow} rounds) and widened back; f32 unchanged. */
  public float round(float v) {
    return switch (this) {
      case F32 -> v;
      case F16 -> Float.float16ToFloat(narrow(v));
      case BF16 -> Float.intBitsToFloat(narrow(v) << 16);
      case Q8_0 -> throw new IllegalStateException("q8_0 rounds a group, not a value");
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

  /** {@code --quantization}'s value: null for "none", {@link #Q8_0} for "q8_0". */
  public static DType fromQuantizationName(String name) {
    return switch (name) {
      case "none" -> null;
      case "q8_0" -> Q8_0;
      default -> throw new IllegalArgumentException("unknown --quantization '" + name + "' (none, q8_0)");
    };
  }
}
