package dev.tandem.engine.model;

/** Element types of weight tensors, as safetensors names them. */
public enum DType {
  F32(4),
  F16(2),
  BF16(2);

  private final int bytes;

  DType(int bytes) {
    this.bytes = bytes;
  }

  public int bytes() {
    return bytes;
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
}
