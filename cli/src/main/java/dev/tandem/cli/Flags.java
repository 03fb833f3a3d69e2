package dev.tandem.cli;

/** Range checks of numeric flags: a value out of range is refused naming the flag, before anything starts. */
final class Flags {
  private Flags() {}

  static void atLeast(String flag, long value, long least) {
    if (value < least) {
      throw new IllegalArgumentException(flag + " must be at least " + least + ", was " + value);
    }
  }

  /** A finite number above 0. */
  static void positive(String flag, double value) {
    if (!(value > 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(flag + " must be a positive number, was " + value);
    }
  }

  /** A finite number of 0 or more (NaN and infinities refused too). */
  static void nonNegative(String flag, double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(flag + " must be 0 or a positive number, was " + value);
    }
  }
}
