package dev.tandem.engine.grammar;

/**
 * Well-formed UTF-8 as a small automaton for the string terminals: states 10 and up inside a
 * multi-byte character (no overlong forms, no surrogates, nothing above U+10FFFF).
 */
final class Utf8 {
  /** The character is complete. */
  static final int DONE = 10;

  private Utf8() {}

  /** The state after a lead byte, or -1 if {@code b} does not start a multi-byte character. */
  static int lead(int b) {
    if (b >= 0xC2 && b <= 0xDF) {
      return 11; // one continuation byte
    }
    if (b == 0xE0) {
      return 20;
    }
    if (b == 0xED) {
      return 21;
    }
    if (b >= 0xE1 && b <= 0xEF) {
      return 12;
    }
    if (b == 0xF0) {
      return 22;
    }
    if (b >= 0xF1 && b <= 0xF3) {
      return 13;
    }
    if (b == 0xF4) {
      return 23;
    }
    return -1;
  }

  /** The state after continuation byte {@code b} in state {@code s}: DONE, another state, or -1. */
  static int continuation(int s, int b) {
    boolean cont = b >= 0x80 && b <= 0xBF;
    return switch (s) {
      case 11, 12, 13 -> cont ? s - 1 : -1;
      case 20 -> b >= 0xA0 && b <= 0xBF ? 11 : -1;
      case 21 -> b >= 0x80 && b <= 0x9F ? 11 : -1;
      case 22 -> b >= 0x90 && b <= 0xBF ? 12 : -1;
      case 23 -> b >= 0x80 && b <= 0x8F ? 12 : -1;
      default -> -1;
    };
  }
}
