package dev.tandem.common;

/** Sets of token ids held as small arrays (stop ids, end-of-sequence ids, a bad word's last tokens). */
public final class TokenIds {
  private TokenIds() {}

  /** Whether {@code token} is one of {@code ids}: a scan, as these sets hold a handful of ids. */
  public static boolean contains(int[] ids, int token) {
    for (int id : ids) {
      if (id == token) {
        return true;
      }
    }
    return false;
  }
}
