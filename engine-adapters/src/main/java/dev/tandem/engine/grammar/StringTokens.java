package dev.tandem.engine.grammar;

import java.util.Arrays;

/**
 * The vocabulary sorted for the inside of a JSON string, where nearly every token is allowed and
 * almost none depends on what follows the string:
 * <ul>
 *   <li>{@link #COMPLETE}: plain characters only (no quote, backslash or control byte; whole
 *       UTF-8 characters) — it keeps the string going and only adds to its length;
 *   <li>{@link #OPEN}: plain characters, then the start of one more;
 *   <li>{@link #QUOTED}: plain characters, a closing quote, then bytes for whatever follows the
 *       string — those rests sit in their own small trie ({@link #quotedRests}), walked once from
 *       the state after the string;
 *   <li>{@link #ESCAPED}: a backslash before any quote — walked byte by byte;
 *   <li>{@link #DEAD}: bytes no string body can hold (a control byte, broken UTF-8).
 * </ul>
 *
 * <p>Immutable.
 */
final class StringTokens {
  static final byte DEAD = 0;
  static final byte COMPLETE = 1;
  static final byte OPEN = 2;
  static final byte QUOTED = 3;
  static final byte ESCAPED = 4;

  final byte[] kind;
  final int[] chars; // whole characters before the end, the open character, or the quote
  final byte[] open; // bytes still missing from the last character of an OPEN token (1..3)
  final long[] plain; // COMPLETE and OPEN tokens
  final long[][] plainByOpen; // [k]: the plain tokens whose last character misses k bytes (0: COMPLETE)
  final int[] escaped;
  final ByteTrie quotedRests; // per QUOTED token: the bytes after its closing quote

  StringTokens(TokenVocabulary vocabulary) {
    int n = vocabulary.size();
    kind = new byte[n];
    chars = new int[n];
    open = new byte[n];
    plain = new long[(n + 63) >>> 6];
    plainByOpen = new long[4][plain.length];
    int[] esc = new int[n];
    int e = 0;
    byte[][] rests = new byte[n][];
    for (int t = 0; t < n; t++) {
      byte[] b = vocabulary.bytes(t);
      if (b == null) {
        continue;
      }
      int quote = classify(t, b);
      switch (kind[t]) {
        case COMPLETE, OPEN -> {
          plain[t >>> 6] |= 1L << t;
          plainByOpen[open[t]][t >>> 6] |= 1L << t;
        }
        case QUOTED -> rests[t] = Arrays.copyOfRange(b, quote + 1, b.length);
        case ESCAPED -> esc[e++] = t;
        default -> { }
      }
    }
    escaped = Arrays.copyOf(esc, e);
    quotedRests = new ByteTrie(rests);
  }

  /** Sets the token's kind; returns the index of its closing quote for QUOTED. */
  private int classify(int t, byte[] b) {
    int count = 0;
    int state = 1; // 1: between characters; Utf8 states inside one
    for (int i = 0; i < b.length; i++) {
      int v = b[i] & 0xff;
      if (state == 1) {
        if (v == '"') {
          kind[t] = QUOTED;
          chars[t] = count;
          return i;
        }
        if (v == '\\') {
          kind[t] = ESCAPED;
          return -1;
        }
        if (v >= 0x20 && v < 0x80) {
          count++;
        } else {
          state = Utf8.lead(v);
          if (state < 0) {
            return -1; // DEAD
          }
        }
      } else {
        state = Utf8.continuation(state, v);
        if (state < 0) {
          return -1;
        }
        if (state == Utf8.DONE) {
          count++;
          state = 1;
        }
      }
    }
    kind[t] = state == 1 ? COMPLETE : OPEN;
    chars[t] = count;
    open[t] = (byte) switch (state) {
      case 1 -> 0;
      case 11 -> 1;
      case 12, 20, 21 -> 2;
      default -> 3;
    };
    return -1;
  }
}
