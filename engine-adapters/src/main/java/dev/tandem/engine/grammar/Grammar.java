package dev.tandem.engine.grammar;

import dev.tandem.engine.grammar.GrammarNode.Alt;
import dev.tandem.engine.grammar.GrammarNode.ByteSet;
import dev.tandem.engine.grammar.GrammarNode.Chr;
import dev.tandem.engine.grammar.GrammarNode.Lit;
import dev.tandem.engine.grammar.GrammarNode.Num;
import dev.tandem.engine.grammar.GrammarNode.Ref;
import dev.tandem.engine.grammar.GrammarNode.Rep;
import dev.tandem.engine.grammar.GrammarNode.Seq;
import dev.tandem.engine.grammar.GrammarNode.Str;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

/**
 * A compiled byte-level grammar and the rules for walking it: a pushdown matcher whose state is a
 * small set of {@link Frame} stacks (several while alternatives are still open). {@link #step}
 * consumes one byte; {@link #remaining} is the fewest bytes that complete the output from a state.
 *
 * <p>Immutable and thread-safe once built.
 */
public final class Grammar {
  /** Deepest chain of open nodes a state may have (bounds nesting and recursion). */
  static final int MAX_DEPTH = 256;
  private static final int INF = 1 << 24;
  private static final int ITEM = 0;
  private static final int SEPARATOR = 1;

  private final GrammarNode root;
  private final List<Frame> start;
  private final String description;

  Grammar(GrammarNode root, String description) {
    this.root = root;
    this.description = description;
    computeMinLengths(root);
    if (root.minLen >= INF) {
      throw new GrammarException("", "the schema admits no finite value (it recurses without end)");
    }
    List<Frame> s = new ArrayList<>();
    enter(root, null, s, 0);
    this.start = List.copyOf(s);
  }

  /** A matcher at the start of the output. */
  public GrammarState newState() {
    return new GrammarState(this, start);
  }

  /** Fewest bytes any output of this grammar has. */
  public int minLength() {
    return root.minLen;
  }

  /**
   * A shortest output, near enough to count its tokens: every choice takes its shortest way (a
   * number is written as one digit, whatever its range).
   */
  public String shortestExample() {
    StringBuilder out = new StringBuilder();
    shortest(root, out, 0);
    return out.toString();
  }

  private static void shortest(GrammarNode n, StringBuilder out, int depth) {
    if (depth > MAX_DEPTH) {
      return;
    }
    switch (n) {
      case Lit lit -> out.append(new String(lit.bytes, java.nio.charset.StandardCharsets.UTF_8));
      case ByteSet set -> out.append(' ');
      case Str str -> out.append('"').append("a".repeat(str.minChars)).append('"');
      case Chr chr -> {
        for (int c = 0x20; c < 0x7f; c++) {
          if (chr.has(c)) {
            out.append((char) c);
            return;
          }
        }
        out.append('a');
      }
      case Num num -> out.append('0');
      case Seq seq -> {
        for (GrammarNode i : seq.items) {
          shortest(i, out, depth + 1);
        }
      }
      case Alt alt -> {
        GrammarNode best = alt.alts[0];
        for (GrammarNode a : alt.alts) {
          if (a.minLen < best.minLen) {
            best = a;
          }
        }
        shortest(best, out, depth + 1);
      }
      case Rep rep -> {
        for (int i = 0; i < rep.min; i++) {
          if (i > 0 && rep.separator != null) {
            shortest(rep.separator, out, depth + 1);
          }
          shortest(rep.item, out, depth + 1);
        }
      }
      case Ref ref -> shortest(ref.target, out, depth + 1);
    }
  }

  @Override
  public String toString() {
    return description;
  }

  // ---- walking ----

  /** The states after byte {@code b} (0..255) from each of {@code states}; empty if none survives. */
  List<Frame> step(List<Frame> states, int b) {
    List<Frame> out = new ArrayList<>(2);
    for (Frame f : states) {
      stepFrame(f, b, out);
    }
    return out;
  }

  private void stepFrame(Frame f, int b, List<Frame> out) {
    switch (f.node) {
      case null -> { } // complete: nothing follows
      case Lit lit -> {
        if (lit.bytes[f.pos] == (byte) b) {
          if (f.pos + 1 == lit.bytes.length) {
            complete(f.parent, out, 0);
          } else {
            add(out, new Frame(lit, f.pos + 1, 0, null, f.parent));
          }
        }
      }
      case ByteSet set -> {
        if (set.contains(b)) {
          complete(f.parent, out, 0);
        }
      }
      case Str str -> stepString(str, f, b, out);
      case Chr chr -> stepChar(chr, f, b, out);
      case Num num -> {
        NumberRange.Digits next = ((NumberRange.Digits) f.data).next(b, num.range.integer());
        if (next != null && num.range.alive(next)) {
          add(out, new Frame(num, 0, 0, next, f.parent));
          if (num.range.accepts(next)) {
            complete(f.parent, out, 0);
          }
        }
      }
      default -> throw new IllegalStateException("not a terminal: " + f.node);
    }
  }

  // Str aux: 0 before the opening quote, 1 in the body, 2 after a backslash, 3..7 in a \\u escape,
  // 10 and up inside a multi-byte UTF-8 character (see Utf8).
  private void stepString(Str str, Frame f, int b, List<Frame> out) {
    boolean room = !str.counted || f.pos < str.maxChars;
    int pos = f.pos;
    switch (f.aux) {
      case 0 -> {
        if (b == '"') {
          add(out, new Frame(str, 0, 1, null, f.parent));
        }
      }
      case 1 -> {
        if (b == '"') {
          if (pos >= str.minChars) {
            complete(f.parent, out, 0);
          }
        } else if (!room) {
          return;
        } else if (b == '\\') {
          add(out, new Frame(str, pos, 2, null, f.parent));
        } else if (b >= 0x20 && b < 0x80) {
          charDone(str, f, out);
        } else {
          int aux = Utf8.lead(b);
          if (aux > 0) {
            add(out, new Frame(str, pos, aux, null, f.parent));
          }
        }
      }
      case 2 -> {
        if (b == 'u') {
          add(out, new Frame(str, pos, 3, null, f.parent));
        } else if ("\"\\/bfnrt".indexOf(b) >= 0) {
          charDone(str, f, out);
        }
      }
      case 3 -> { // first hex digit; d800-dfff (surrogates) are left out
        if (b == 'd' || b == 'D') {
          add(out, new Frame(str, pos, 7, null, f.parent));
        } else if (hex(b)) {
          add(out, new Frame(str, pos, 4, null, f.parent));
        }
      }
      case 7 -> {
        if (b >= '0' && b <= '7') {
          add(out, new Frame(str, pos, 5, null, f.parent));
        }
      }
      case 4, 5 -> {
        if (hex(b)) {
          add(out, new Frame(str, pos, f.aux + 1, null, f.parent));
        }
      }
      case 6 -> {
        if (hex(b)) {
          charDone(str, f, out);
        }
      }
      default -> {
        int aux = Utf8.continuation(f.aux, b);
        if (aux == Utf8.DONE) {
          charDone(str, f, out);
        } else if (aux > 0) {
          add(out, new Frame(str, pos, aux, null, f.parent));
        }
      }
    }
  }

  private static void charDone(Str str, Frame f, List<Frame> out) {
    add(out, new Frame(str, str.counted ? f.pos + 1 : 0, 1, null, f.parent));
  }

  // Chr aux: 0 at the start, 1 after a backslash, 10 and up inside a UTF-8 character.
  private void stepChar(Chr chr, Frame f, int b, List<Frame> out) {
    if (f.aux == 0) {
      if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') {
        if (chr.has(b)) {
          complete(f.parent, out, 0);
        }
      } else if (b == '\\') {
        if (chr.escapable) {
          add(out, new Frame(chr, 0, 1, null, f.parent));
        }
      } else if (b >= 0x80 && chr.nonAscii) {
        int aux = Utf8.lead(b);
        if (aux > 0) {
          add(out, new Frame(chr, 0, aux, null, f.parent));
        }
      }
    } else if (f.aux == 1) {
      int c = switch (b) {
        case '"' -> '"';
        case '\\' -> '\\';
        case '/' -> '/';
        case 'n' -> '\n';
        case 't' -> '\t';
        case 'r' -> '\r';
        case 'b' -> '\b';
        case 'f' -> '\f';
        default -> -1;
      };
      if (c >= 0 && chr.has(c)) {
        complete(f.parent, out, 0);
      }
    } else {
      int aux = Utf8.continuation(f.aux, b);
      if (aux == Utf8.DONE) {
        complete(f.parent, out, 0);
      } else if (aux > 0) {
        add(out, new Frame(chr, 0, aux, null, f.parent));
      }
    }
  }

  private static boolean hex(int b) {
    return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
  }

  private void enter(GrammarNode node, Frame parent, List<Frame> out, int hops) {
    if ((parent != null && parent.depth >= MAX_DEPTH) || hops > 4 * MAX_DEPTH) {
      return; // too deep: this way is not taken
    }
    switch (node) {
      case Lit lit -> {
        if (lit.bytes.length == 0) {
          complete(parent, out, hops + 1);
        } else {
          add(out, new Frame(lit, 0, 0, null, parent));
        }
      }
      case ByteSet set -> add(out, new Frame(set, 0, 0, null, parent));
      case Str str -> add(out, new Frame(str, 0, 0, null, parent));
      case Chr chr -> add(out, new Frame(chr, 0, 0, null, parent));
      case Num num -> add(out, new Frame(num, 0, 0, NumberRange.Digits.START, parent));
      case Seq seq -> {
        if (seq.items.length == 0) {
          complete(parent, out, hops + 1);
        } else {
          enter(seq.items[0], new Frame(seq, 0, 0, null, parent), out, hops + 1);
        }
      }
      case Alt alt -> {
        for (GrammarNode a : alt.alts) {
          enter(a, parent, out, hops + 1);
        }
      }
      case Rep rep -> {
        if (rep.min == 0) {
          complete(parent, out, hops + 1);
        }
        if (rep.max > 0) {
          enter(rep.item, new Frame(rep, 0, ITEM, null, parent), out, hops + 1);
        }
      }
      case Ref ref -> enter(ref.target, parent, out, hops + 1);
    }
  }

  /** The child of {@code parent} is complete: continue after it. */
  private void complete(Frame parent, List<Frame> out, int hops) {
    if (parent == null) {
      add(out, Frame.ACCEPT);
      return;
    }
    switch (parent.node) {
      case Seq seq -> {
        int next = parent.pos + 1;
        if (next < seq.items.length) {
          enter(seq.items[next], new Frame(seq, next, 0, null, parent.parent), out, hops + 1);
        } else {
          complete(parent.parent, out, hops + 1);
        }
      }
      case Rep rep -> {
        if (parent.aux == ITEM) {
          int done = parent.pos + 1;
          if (done >= rep.min) {
            complete(parent.parent, out, hops + 1);
          }
          if (done < rep.max) {
            // Past min with no max, the exact count no longer matters: keep states equal.
            int count = rep.max == Integer.MAX_VALUE ? Math.min(done, rep.min) : done;
            if (rep.separator != null) {
              enter(rep.separator, new Frame(rep, count, SEPARATOR, null, parent.parent), out, hops + 1);
            } else {
              enter(rep.item, new Frame(rep, count, ITEM, null, parent.parent), out, hops + 1);
            }
          }
        } else {
          enter(rep.item, new Frame(rep, parent.pos, ITEM, null, parent.parent), out, hops + 1);
        }
      }
      default -> throw new IllegalStateException("not a composite: " + parent.node);
    }
  }

  private static void add(List<Frame> out, Frame f) {
    for (int i = 0; i < out.size(); i++) {
      if (out.get(i).equals(f)) {
        return;
      }
    }
    out.add(f);
  }

  // ---- how far from the end ----

  /** Fewest bytes that complete the output from state {@code f} (0: complete). */
  static int remaining(Frame f) {
    int total = terminalRemaining(f);
    for (Frame a = f.parent; a != null; a = a.parent) {
      total = Math.min(INF, total + restOf(a));
    }
    return total;
  }

  static int remaining(List<Frame> states) {
    int best = INF;
    for (Frame f : states) {
      best = Math.min(best, remaining(f));
    }
    return best;
  }

  private static int terminalRemaining(Frame f) {
    return switch (f.node) {
      case null -> 0;
      case Lit lit -> lit.bytes.length - f.pos;
      case Str str -> switch (f.aux) {
        case 0 -> 2 + str.minChars;
        case 1 -> Math.max(0, str.minChars - f.pos) + 1;
        default -> charRemaining(f.aux) + Math.max(0, str.minChars - f.pos - 1) + 1;
      };
      case Chr chr -> f.aux == 0 ? 1 : charRemaining(f.aux);
      // A lower bound where a range needs more digits; exact otherwise.
      case Num num -> num.range.accepts((NumberRange.Digits) f.data) ? 0 : 1;
      default -> 1;
    };
  }

  /** Bytes left in the character being written (string aux states 2 and up; pattern aux 1 and up). */
  private static int charRemaining(int aux) {
    return switch (aux) {
      case 1, 2 -> 1; // after a backslash (pattern: 1, string: 2)
      case 3 -> 4; // \\u, four hex digits to go
      case 4, 7 -> 3;
      case 5 -> 2;
      case 6 -> 1;
      case 11 -> 1;
      case 12, 20, 21 -> 2;
      case 13, 22, 23 -> 3;
      default -> 1;
    };
  }

  private static int restOf(Frame a) {
    return switch (a.node) {
      case Seq seq -> seq.suffixMin[a.pos + 1];
      case Rep rep -> {
        int per = Math.min(INF, rep.item.minLen + (rep.separator == null ? 0 : rep.separator.minLen));
        if (a.aux == ITEM) {
          yield (int) Math.min(INF, (long) Math.max(0, rep.min - a.pos - 1) * per);
        }
        yield (int) Math.min(INF, rep.item.minLen + (long) Math.max(0, rep.min - a.pos - 1) * per);
      }
      default -> 0;
    };
  }

  // ---- minimum lengths, to a fixed point (recursive schemas) ----

  private static void computeMinLengths(GrammarNode root) {
    List<GrammarNode> all = new ArrayList<>();
    collect(root, new IdentityHashMap<>(), all);
    for (GrammarNode n : all) {
      n.minLen = INF;
    }
    boolean changed = true;
    while (changed) {
      changed = false;
      for (GrammarNode n : all) {
        int v = minLength(n);
        if (v < n.minLen) {
          n.minLen = v;
          changed = true;
        }
      }
    }
    for (GrammarNode n : all) {
      if (n instanceof Seq seq) {
        seq.suffixMin = new int[seq.items.length + 1];
        for (int i = seq.items.length - 1; i >= 0; i--) {
          seq.suffixMin[i] = Math.min(INF, seq.suffixMin[i + 1] + seq.items[i].minLen);
        }
      }
    }
  }

  private static int minLength(GrammarNode n) {
    return switch (n) {
      case Lit lit -> lit.bytes.length;
      case ByteSet set -> 1;
      case Str str -> 2 + str.minChars;
      case Chr chr -> 1;
      case Num num -> 1;
      case Seq seq -> {
        long sum = 0;
        for (GrammarNode i : seq.items) {
          sum += i.minLen;
        }
        yield (int) Math.min(INF, sum);
      }
      case Alt alt -> {
        int best = INF;
        for (GrammarNode a : alt.alts) {
          best = Math.min(best, a.minLen);
        }
        yield best;
      }
      case Rep rep -> rep.min == 0 ? 0
          : (int) Math.min(INF, (long) rep.min * rep.item.minLen
              + (long) (rep.min - 1) * (rep.separator == null ? 0 : rep.separator.minLen));
      case Ref ref -> ref.target.minLen;
    };
  }

  private static void collect(GrammarNode n, IdentityHashMap<GrammarNode, Boolean> seen, List<GrammarNode> out) {
    if (seen.put(n, Boolean.TRUE) != null) {
      return;
    }
    out.add(n);
    switch (n) {
      case Seq seq -> {
        for (GrammarNode i : seq.items) {
          collect(i, seen, out);
        }
      }
      case Alt alt -> {
        for (GrammarNode a : alt.alts) {
          collect(a, seen, out);
        }
      }
      case Rep rep -> {
        collect(rep.item, seen, out);
        if (rep.separator != null) {
          collect(rep.separator, seen, out);
        }
      }
      case Ref ref -> collect(ref.target, seen, out);
      default -> { }
    }
  }
}
