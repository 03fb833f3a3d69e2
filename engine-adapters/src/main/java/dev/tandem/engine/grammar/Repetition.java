package dev.tandem.engine.grammar;

import dev.tandem.engine.grammar.GrammarNode.Rep;
import java.util.function.Function;

/**
 * The counts of a repetition written {@code * + ?}, {@code {m}}, {@code {m,}} or {@code {m,n}}
 * (spaces allowed around the numbers), as regular expressions and EBNF grammars both write it: {@code min}, {@code
 * max} ({@link Integer#MAX_VALUE} for {@code {m,}}) and {@code end}, the index after the {@code }}.
 */
record Repetition(int min, int max, int end) {
  /** The largest count either bound may have. */
  static final int MAX_REPEAT = 1000;

  /**
   * {@code item} repeated {@code min}..{@code max} times. A repetition of a repetition without a
   * separator, {@code (x{a,b}){c,d}}, is x some N times, N in the union of [k·a, k·b] for k from c
   * to d; where that union has no gap it is written as one repetition, {@code x{c·a,d·b}}, so that
   * nesting does not multiply the matcher's states (each level's count is part of a state: 9^depth
   * of them for nested {@code {0,9}}, and each new one a new token mask).
   */
  GrammarNode over(GrammarNode item) {
    if (item instanceof Rep inner && inner.separator == null && gapless(inner.min, inner.max)) {
      long lo = (long) min * inner.min;
      // Past 2^31 − 1 items (as many bytes: an item that is not empty takes one) no output gets,
      // so a larger maximum is none.
      long hi = max == 0 || inner.max == 0 ? 0 : Math.min((long) max * inner.max, Integer.MAX_VALUE);
      if (lo < Integer.MAX_VALUE) {
        return new Rep(inner.item, null, (int) lo, (int) hi);
      }
    }
    return new Rep(item, null, min, max);
  }

  /** Whether [k·a, k·b] for k from min to max leave no gap (b may be unbounded). */
  private boolean gapless(int a, int b) {
    if (max == min) {
      return true;
    }
    if (min == 0) {
      return a <= 1; // {0} and [a, b] touch only then; past k = 1 the intervals overlap as b >= a
    }
    return b == Integer.MAX_VALUE || a - 1 <= (long) min * (b - a); // the first gap, if any, is after k = min
  }

  /** The repetition {@code *}, {@code +} or {@code ?} written at {@code at}, or null for another character. */
  static Repetition symbol(char c, int at) {
    return switch (c) {
      case '*' -> new Repetition(0, Integer.MAX_VALUE, at + 1);
      case '+' -> new Repetition(1, Integer.MAX_VALUE, at + 1);
      case '?' -> new Repetition(0, 1, at + 1);
      default -> null;
    };
  }

  /**
   * The repetition whose {@code {} is at {@code open} in {@code text}; what is wrong with it is
   * thrown as {@code error} makes it (the caller adds where).
   */
  static Repetition parse(String text, int open, Function<String, GrammarException> error) {
    int close = text.indexOf('}', open);
    if (close < 0) {
      throw error.apply("unclosed '{'");
    }
    String[] parts = text.substring(open + 1, close).split(",", -1);
    int min;
    int max;
    try {
      min = Integer.parseInt(parts[0].strip());
      max = parts.length == 1 ? min : parts[1].isBlank() ? Integer.MAX_VALUE : Integer.parseInt(parts[1].strip());
    } catch (NumberFormatException e) {
      throw error.apply("bad repetition '" + text.substring(open, close + 1) + "'");
    }
    if (parts.length > 2 || min < 0 || min > max || min > MAX_REPEAT || (max != Integer.MAX_VALUE && max > MAX_REPEAT)) {
      throw error.apply("repetition counts must be ordered, at most " + MAX_REPEAT + ", in the form {m}, {m,} or {m,n}");
    }
    return new Repetition(min, max, close + 1);
  }
}
