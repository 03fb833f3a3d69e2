package dev.tandem.engine.grammar;

/**
 * One node of a compiled byte-level grammar. Composite nodes ({@link Seq}, {@link Alt}, {@link
 * Rep}, {@link Ref}) arrange others; terminals ({@link Lit}, {@link ByteSet}, {@link Str}, {@link
 * Chr}, {@link Num}) consume bytes. Nodes compare by identity: a grammar is built once and shared.
 * {@link #minLen} is the fewest bytes the node can match (filled in by {@link Grammar}).
 */
abstract sealed class GrammarNode {
  int minLen;
  int depthNeed; // fewest levels of frames a way through the node opens (filled in by Grammar)

  /** A fixed byte string. */
  static final class Lit extends GrammarNode {
    final byte[] bytes;

    Lit(byte[] bytes) {
      this.bytes = bytes;
    }
  }

  /** One byte from a set. */
  static final class ByteSet extends GrammarNode {
    private final long[] bits = new long[4];

    ByteSet(String chars) {
      for (int i = 0; i < chars.length(); i++) {
        int b = chars.charAt(i);
        bits[b >>> 6] |= 1L << b;
      }
    }

    boolean contains(int b) {
      return (bits[b >>> 6] & (1L << b)) != 0;
    }
  }

  /**
   * Any bytes up to and including the first occurrence of {@code close} (a reasoning model's free
   * text and the tag that ends it). A frame's {@code pos} is how many bytes of {@code close} the
   * text so far ends with (a Knuth–Morris–Pratt state), so the frames repeat and their masks cache.
   */
  static final class Until extends GrammarNode {
    final byte[] close;
    private final int[][] next; // next[pos][byte]: the state after that byte (close.length: found)

    Until(byte[] close) {
      if (close.length == 0) {
        throw new IllegalArgumentException("the closing text must not be empty");
      }
      this.close = close;
      int[] fail = new int[close.length + 1]; // longest proper border of close[0..i)
      for (int i = 1, k = 0; i < close.length; i++) {
        while (k > 0 && close[i] != close[k]) {
          k = fail[k];
        }
        if (close[i] == close[k]) {
          k++;
        }
        fail[i + 1] = k;
      }
      this.next = new int[close.length][256];
      for (int pos = 0; pos < close.length; pos++) {
        for (int b = 0; b < 256; b++) {
          int k = pos;
          while (k > 0 && (close[k] & 0xff) != b) {
            k = fail[k];
          }
          next[pos][b] = (close[k] & 0xff) == b ? k + 1 : 0;
        }
      }
    }

    /** The state after byte {@code b} from state {@code pos}; {@code close.length} once it is found. */
    int after(int pos, int b) {
      return next[pos][b];
    }
  }

  /** The items one after another. */
  static final class Seq extends GrammarNode {
    final GrammarNode[] items;
    int[] suffixMin; // suffixMin[i]: fewest bytes items[i..] can match

    Seq(GrammarNode... items) {
      this.items = items;
    }
  }

  /** Any one of the alternatives. */
  static final class Alt extends GrammarNode {
    final GrammarNode[] alts;

    Alt(GrammarNode... alts) {
      this.alts = alts;
    }
  }

  /** {@code min}..{@code max} items, with {@code separator} (or null) between them. */
  static final class Rep extends GrammarNode {
    final GrammarNode item;
    final GrammarNode separator;
    final int min;
    final int max;

    Rep(GrammarNode item, GrammarNode separator, int min, int max) {
      this.item = item;
      this.separator = separator;
      this.min = min;
      this.max = max;
    }
  }

  /** Another node, filled in after it is built (recursive schemas and grammar rules). */
  static final class Ref extends GrammarNode {
    GrammarNode target;
    final String name; // what errors call it: a rule's name, or a schema's pointer

    Ref() {
      this("");
    }

    Ref(String name) {
      this.name = name;
    }
  }

  /**
   * A JSON string with quotes, {@code minChars}..{@code maxChars} characters (an escape is one),
   * any valid UTF-8; {@code counted} when either bound is set (else the count stays 0, so the
   * matcher's states repeat and their masks cache).
   */
  static final class Str extends GrammarNode {
    final int minChars;
    final int maxChars;
    final boolean counted;

    Str(int minChars, int maxChars) {
      this.minChars = minChars;
      this.maxChars = maxChars;
      this.counted = minChars > 0 || maxChars < Integer.MAX_VALUE;
    }
  }

  /**
   * One character, as a pattern atom: an ASCII character of {@code ascii}, or any non-ASCII
   * character (as UTF-8) when {@code nonAscii}. Inside a JSON string (not {@code raw}) a character
   * is written raw or escaped where JSON needs it; in plain text ({@code raw}: a regular expression
   * or grammar over the whole output) always as itself.
   */
  static final class Chr extends GrammarNode {
    final long[] ascii; // 2 words: bits 0..127
    final boolean nonAscii;
    final boolean raw;

    final boolean escapable; // some member is written as an escape (\", \n, …)

    Chr(long[] ascii, boolean nonAscii) {
      this(ascii, nonAscii, false);
    }

    Chr(long[] ascii, boolean nonAscii, boolean raw) {
      this.ascii = ascii;
      this.nonAscii = nonAscii;
      this.raw = raw;
      boolean e = false;
      for (char c : "\"\\/\n\t\r\b\f".toCharArray()) {
        e |= has(c);
      }
      this.escapable = e && !raw;
    }

    boolean has(int c) {
      return c < 128 && (ascii[c >>> 6] & (1L << c)) != 0;
    }
  }

  /**
   * A JSON number without exponent (at most {@link NumberRange#MAX_DIGITS} digits before and
   * after the point), optionally an integer, optionally within a range.
   */
  static final class Num extends GrammarNode {
    final NumberRange range;

    Num(NumberRange range) {
      this.range = range;
    }
  }
}
