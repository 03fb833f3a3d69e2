package dev.tandem.engine.grammar;

/**
 * One node of a compiled byte-level grammar. Composite nodes ({@link Seq}, {@link Alt}, {@link
 * Rep}, {@link Ref}) arrange others; terminals ({@link Lit}, {@link ByteSet}, {@link Str}, {@link
 * Chr}, {@link Num}, {@link Until}, {@link FreeText}) consume bytes. Nodes compare by identity: a
 * grammar is built once and shared. {@link #minLen} is the fewest bytes the node can match (filled
 * in by {@link Grammar}).
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
   * Texts to look for in free text (a reasoning's closing tag, a structural tag's triggers), as an
   * Aho–Corasick automaton: a state is the longest suffix of the text so far that begins one of
   * them, so that the frames of free text repeat and their masks cache. No text may contain
   * another (the first occurrence decides what follows).
   */
  static final class Scan {
    final byte[][] texts;
    private final int[][] next; // next[state][byte]
    private final int[] found; // found[state]: the text that state completes, or -1
    private final int[][] distance; // distance[i][state]: fewest bytes to complete text i without completing another

    Scan(byte[][] texts) {
      for (int i = 0; i < texts.length; i++) {
        if (texts[i].length == 0) {
          throw new IllegalArgumentException("the text to look for must not be empty");
        }
        for (int j = 0; j < texts.length; j++) {
          if (i != j && contains(texts[j], texts[i])) {
            throw new GrammarException("", "'" + new String(texts[j], java.nio.charset.StandardCharsets.UTF_8) + "' contains '"
                + new String(texts[i], java.nio.charset.StandardCharsets.UTF_8) + "': no trigger may contain another");
          }
        }
      }
      this.texts = texts;
      // The trie of the texts, then each state's fallback (breadth first), then the full table.
      java.util.List<int[]> children = new java.util.ArrayList<>();
      java.util.List<Integer> ends = new java.util.ArrayList<>();
      children.add(filled(-1));
      ends.add(-1);
      for (int i = 0; i < texts.length; i++) {
        int s = 0;
        for (byte b : texts[i]) {
          int c = children.get(s)[b & 0xff];
          if (c < 0) {
            c = children.size();
            children.get(s)[b & 0xff] = c;
            children.add(filled(-1));
            ends.add(-1);
          }
          s = c;
        }
        ends.set(s, i);
      }
      int n = children.size();
      this.next = new int[n][];
      this.found = new int[n];
      int[] fail = new int[n];
      int[] queue = new int[n];
      int head = 0;
      int tail = 0;
      next[0] = new int[256];
      for (int b = 0; b < 256; b++) {
        int c = children.get(0)[b];
        next[0][b] = c < 0 ? 0 : c;
        if (c > 0) {
          queue[tail++] = c;
        }
      }
      while (head < tail) {
        int s = queue[head++];
        next[s] = new int[256];
        for (int b = 0; b < 256; b++) {
          int c = children.get(s)[b];
          if (c < 0) {
            next[s][b] = next[fail[s]][b];
          } else {
            fail[c] = next[fail[s]][b];
            next[s][b] = c;
            queue[tail++] = c;
          }
        }
      }
      for (int s = 0; s < n; s++) {
        found[s] = ends.get(s);
      }
      // Predecessors of each state (each state and byte once), for the distances backwards.
      int[] count = new int[n + 1];
      for (int s = 0; s < n; s++) {
        for (int b = 0; b < 256; b++) {
          count[next[s][b] + 1]++;
        }
      }
      for (int s = 0; s < n; s++) {
        count[s + 1] += count[s];
      }
      int[] from = new int[n * 256];
      int[] at = count.clone();
      for (int s = 0; s < n; s++) {
        for (int b = 0; b < 256; b++) {
          from[at[next[s][b]]++] = s;
        }
      }
      this.distance = new int[texts.length][];
      for (int i = 0; i < texts.length; i++) {
        distance[i] = distances(i, count, from);
      }
    }

    Scan(byte[] text) {
      this(new byte[][] {text});
    }

    private static int[] filled(int v) {
      int[] a = new int[256];
      java.util.Arrays.fill(a, v);
      return a;
    }

    private static boolean contains(byte[] hay, byte[] needle) {
      outer:
      for (int at = 0; at + needle.length <= hay.length; at++) {
        for (int k = 0; k < needle.length; k++) {
          if (hay[at + k] != needle[k]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    }

    /**
     * Fewest bytes from each state to complete text {@code i} without completing another first
     * (breadth first, backwards from the state that completes it; {@link Integer#MAX_VALUE} where
     * none can).
     */
    private int[] distances(int i, int[] start, int[] from) {
      int n = next.length;
      int[] d = new int[n];
      java.util.Arrays.fill(d, Integer.MAX_VALUE);
      int[] queue = new int[n];
      int head = 0;
      int tail = 0;
      for (int s = 0; s < n; s++) {
        if (found[s] == i) {
          d[s] = 0;
          queue[tail++] = s;
        }
      }
      while (head < tail) {
        int t = queue[head++];
        for (int k = start[t]; k < start[t + 1]; k++) {
          int s = from[k];
          if (found[s] < 0 && d[s] == Integer.MAX_VALUE) { // a completed text goes nowhere further
            d[s] = d[t] + 1;
            queue[tail++] = s;
          }
        }
      }
      return d;
    }

    /** The state after byte {@code b}. */
    int after(int state, int b) {
      return next[state][b];
    }

    /** The text that {@code state} completes, or -1. */
    int found(int state) {
      return found[state];
    }

    /** Fewest bytes from {@code state} to the end of text {@code i} (none other completed first). */
    int distance(int i, int state) {
      return distance[i][state];
    }
  }

  /**
   * Any bytes up to and including the first occurrence of one of {@code scan}'s texts, where that
   * is text {@code which} (a reasoning model's free text and the tag that ends it; a structural
   * tag's free text and a trigger). A frame's {@code pos} is its {@link Scan} state.
   */
  static final class Until extends GrammarNode {
    final Scan scan;
    final int which;

    Until(Scan scan, int which) {
      this.scan = scan;
      this.which = which;
    }

    Until(byte[] close) {
      this(new Scan(close), 0);
    }

    /** The text that ends it. */
    byte[] close() {
      return scan.texts[which];
    }
  }

  /**
   * Any bytes in which none of {@code scan}'s texts occurs, ending anywhere (a structural tag's
   * free text after its last structure). A frame's {@code pos} is its {@link Scan} state.
   */
  static final class FreeText extends GrammarNode {
    final Scan scan;

    FreeText(Scan scan) {
      this.scan = scan;
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
