package dev.tandem.engine.grammar;

import java.util.Arrays;

/**
 * The vocabulary sorted for the inside of a JSON string, where nearly every token is allowed: a
 * token of plain characters (no quote, backslash or control byte; well-formed UTF-8) keeps the
 * string going and only adds to its length, so it needs no walk. Each token is {@link #COMPLETE}
 * (whole characters), {@link #OPEN} (whole characters, then the start of one more) or {@link
 * #OTHER} (walked byte by byte).
 *
 * <p>Immutable.
 */
final class StringTokens {
  static final byte OTHER = 0;
  static final byte COMPLETE = 1;
  static final byte OPEN = 2;

  final byte[] kind;
  final int[] chars; // whole characters of a COMPLETE or OPEN token
  final byte[] open; // bytes still missing from the last character of an OPEN token (1..3)
  final long[] plain; // COMPLETE and OPEN tokens
  final int[] others;

  StringTokens(TokenVocabulary vocabulary) {
    int n = vocabulary.size();
    kind = new byte[n];
    chars = new int[n];
    open = new byte[n];
    plain = new long[(n + 63) >>> 6];
    int[] other = new int[n];
    int o = 0;
    for (int t = 0; t < n; t++) {
      byte[] b = vocabulary.bytes(t);
      if (b == null) {
        continue;
      }
      classify(t, b);
      if (kind[t] == OTHER) {
        other[o++] = t;
      } else {
        plain[t >>> 6] |= 1L << t;
      }
    }
    others = Arrays.copyOf(other, o);
  }

  private void classify(int t, byte[] b) {
    int count = 0;
    int state = 1; // 1: between characters; Utf8 states inside one
    for (byte x : b) {
      int v = x & 0xff;
      if (state == 1) {
        if (v >= 0x20 && v < 0x80 && v != '"' && v != '\\') {
          count++;
        } else {
          state = Utf8.lead(v);
          if (state < 0) {
            return; // OTHER
          }
        }
      } else {
        state = Utf8.continuation(state, v);
        if (state < 0) {
          return;
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
  }
}
