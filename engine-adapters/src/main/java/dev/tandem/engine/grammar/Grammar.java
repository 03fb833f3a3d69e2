package dev.tandem.engine.grammar;

import dev.tandem.engine.grammar.GrammarNode.Alt;
import dev.tandem.engine.grammar.GrammarNode.ByteSet;
import dev.tandem.engine.grammar.GrammarNode.Chr;
import dev.tandem.engine.grammar.GrammarNode.FreeText;
import dev.tandem.engine.grammar.GrammarNode.Lit;
import dev.tandem.engine.grammar.GrammarNode.Num;
import dev.tandem.engine.grammar.GrammarNode.Ref;
import dev.tandem.engine.grammar.GrammarNode.Rep;
import dev.tandem.engine.grammar.GrammarNode.Seq;
import dev.tandem.engine.grammar.GrammarNode.Str;
import dev.tandem.engine.grammar.GrammarNode.Until;
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
  /**
   * Deepest chain of open nodes a state may have (bounds nesting and recursion). A state is kept
   * only while some way to the end of the output fits within it ({@link #fits}): otherwise an
   * output nested that deep could not be finished, and the masker would find no token.
   */
  static final int MAX_DEPTH = 256;
  private static final int INF = 1 << 24;
  private static final int ITEM = 0;
  private static final int SEPARATOR = 1;

  /**
   * Most states a text grammar's matcher keeps (see {@link #ofText}): an ambiguous grammar can
   * otherwise double them with each byte.
   */
  static final int MAX_TEXT_STATES = 256;

  private final GrammarNode root;
  private final List<Frame> start;
  private final String description;
  private final int maxStates;
  /**
   * Whether this is a text grammar ({@link #ofText}): its sequences' last items are entered in
   * place of the sequence ({@link #seqFrame}), left recursion is refused, each node is entered once
   * per step from the same place, and its states are bounded.
   */
  private final boolean tailCalls;
  /** Frames no deeper than this fit whatever follows them (the deepest any node needs is below it). */
  private final int safeDepth;
  /**
   * The most entries and completions one byte's step makes: {@value #STEP_WORK} and four per node
   * of the grammar, so that a walk through every node (an {@code enum} or {@code anyOf} of
   * thousands, the start of a large grammar) always completes, while the ways an ambiguous nesting
   * multiplies are cut (GrammarMaskBench's constraints take at most 128 a step).
   */
  private final int stepWork;
  static final int STEP_WORK = 1 << 12;

  Grammar(GrammarNode root, String description) {
    this(root, description, Integer.MAX_VALUE);
  }

  private Grammar(GrammarNode root, String description, int maxStates) {
    this.root = root;
    this.description = description;
    this.maxStates = maxStates;
    this.tailCalls = maxStates != Integer.MAX_VALUE;
    List<GrammarNode> all = computeMinLengths(root);
    if (root.minLen >= INF) {
      throw new GrammarException("", tailCalls ? "the grammar admits no finite output (it recurses without end)"
          : "the schema admits no finite value (it recurses without end)");
    }
    int deepestNeed = computeDepthNeeds(all, tailCalls);
    this.safeDepth = MAX_DEPTH - deepestNeed;
    this.stepWork = STEP_WORK + 4 * all.size();
    if (root.depthNeed > MAX_DEPTH) {
      throw new GrammarException("", "the " + (tailCalls ? "grammar" : "schema") + " nests more than "
          + MAX_DEPTH + " levels before any output can end");
    }
    if (tailCalls) {
      refuseLeftRecursion(all);
    }
    Closure s = newClosure();
    enter(root, null, s, 0);
    this.start = List.copyOf(s);
  }

  /**
   * A grammar over the output's plain text (a regular expression, a list of choices, an EBNF
   * grammar), written by users rather than derived from a schema: a rule that can reach itself
   * before matching a byte is refused (a GrammarException naming it), and the matcher keeps at
   * most {@value #MAX_TEXT_STATES} states. Dropping states past that is safe: each one kept is a
   * way to a valid end, so the output still matches the grammar; only some of its other parses of
   * an ambiguous prefix are no longer followed.
   */
  static Grammar ofText(GrammarNode root, String description) {
    return new Grammar(root, description, MAX_TEXT_STATES);
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
        for (int c = 1; c < 0x80 && chr.raw; c++) {
          if (chr.has(c)) {
            out.append((char) c);
            return;
          }
        }
        out.append(chr.raw ? "é" : "a");
      }
      case Num num -> out.append('0');
      case Until until -> out.append(new String(until.close(), java.nio.charset.StandardCharsets.UTF_8));
      case FreeText free -> { }
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
    Closure out = newClosure();
    for (Frame f : states) {
      stepFrame(f, b, out);
    }
    return out;
  }

  private Closure newClosure() {
    return new Closure(maxStates, stepWork, safeDepth, tailCalls);
  }

  private void stepFrame(Frame f, int b, Closure out) {
    switch (f.node) {
      case null -> { } // complete: nothing follows
      case Lit lit -> {
        if (lit.bytes[f.pos] == (byte) b) {
          if (f.pos + 1 == lit.bytes.length) {
            complete(f.parent, out, 0);
          } else {
            out.offer(new Frame(lit, f.pos + 1, 0, null, f.parent));
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
      case Until until -> {
        int s = until.scan.after(f.pos, b);
        int found = until.scan.found(s);
        if (found == until.which) {
          complete(f.parent, out, 0);
        } else if (found < 0) {
          out.offer(new Frame(until, s, 0, null, f.parent));
        } // else another text came first: this way is dead
      }
      case FreeText free -> {
        int s = free.scan.after(f.pos, b);
        if (free.scan.found(s) < 0) {
          out.offer(new Frame(free, s, 0, null, f.parent));
          complete(f.parent, out, 0);
        }
      }
      case Num num -> {
        NumberRange.Digits next = ((NumberRange.Digits) f.data).next(b, num.range.integer());
        if (next != null && num.range.alive(next)) {
          out.offer(new Frame(num, 0, 0, next, f.parent));
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
  private void stepString(Str str, Frame f, int b, Closure out) {
    boolean room = !str.counted || f.pos < str.maxChars;
    int pos = f.pos;
    switch (f.aux) {
      case 0 -> {
        if (b == '"') {
          out.offer(new Frame(str, 0, 1, null, f.parent));
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
          out.offer(new Frame(str, pos, 2, null, f.parent));
        } else if (b >= 0x20 && b < 0x80) {
          charDone(str, f, out);
        } else {
          int aux = Utf8.lead(b);
          if (aux > 0) {
            out.offer(new Frame(str, pos, aux, null, f.parent));
          }
        }
      }
      case 2 -> {
        if (b == 'u') {
          out.offer(new Frame(str, pos, 3, null, f.parent));
        } else if ("\"\\/bfnrt".indexOf(b) >= 0) {
          charDone(str, f, out);
        }
      }
      case 3 -> { // first hex digit; d800-dfff (surrogates) are left out
        if (b == 'd' || b == 'D') {
          out.offer(new Frame(str, pos, 7, null, f.parent));
        } else if (hex(b)) {
          out.offer(new Frame(str, pos, 4, null, f.parent));
        }
      }
      case 7 -> {
        if (b >= '0' && b <= '7') {
          out.offer(new Frame(str, pos, 5, null, f.parent));
        }
      }
      case 4, 5 -> {
        if (hex(b)) {
          out.offer(new Frame(str, pos, f.aux + 1, null, f.parent));
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
          out.offer(new Frame(str, pos, aux, null, f.parent));
        }
      }
    }
  }

  private static void charDone(Str str, Frame f, Closure out) {
    out.offer(new Frame(str, str.counted ? f.pos + 1 : 0, 1, null, f.parent));
  }

  // Chr aux: 0 at the start, 1 after a backslash, 10 and up inside a UTF-8 character.
  private void stepChar(Chr chr, Frame f, int b, Closure out) {
    if (f.aux == 0 && chr.raw) {
      if (b < 0x80) {
        if (chr.has(b)) {
          complete(f.parent, out, 0);
        }
      } else if (chr.nonAscii) {
        int aux = Utf8.lead(b);
        if (aux > 0) {
          out.offer(new Frame(chr, 0, aux, null, f.parent));
        }
      }
    } else if (f.aux == 0) {
      if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') {
        if (chr.has(b)) {
          complete(f.parent, out, 0);
        }
      } else if (b == '\\') {
        if (chr.escapable) {
          out.offer(new Frame(chr, 0, 1, null, f.parent));
        }
      } else if (b >= 0x80 && chr.nonAscii) {
        int aux = Utf8.lead(b);
        if (aux > 0) {
          out.offer(new Frame(chr, 0, aux, null, f.parent));
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
        out.offer(new Frame(chr, 0, aux, null, f.parent));
      }
    }
  }

  private static boolean hex(int b) {
    return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
  }

  private void enter(GrammarNode node, Frame parent, Closure out, int hops) {
    if ((parent != null && parent.depth >= MAX_DEPTH) || hops > 4 * MAX_DEPTH || out.exhausted()) {
      return; // too deep, or the step's walk is full or spent: this way is not taken
    }
    if (tailCalls && !out.firstEnter(node, parent)) {
      return; // entered from here already in this step: the same ways follow
    }
    switch (node) {
      case Lit lit -> {
        if (lit.bytes.length == 0) {
          complete(parent, out, hops + 1);
        } else {
          out.offer(new Frame(lit, 0, 0, null, parent));
        }
      }
      case ByteSet set -> out.offer(new Frame(set, 0, 0, null, parent));
      case Str str -> out.offer(new Frame(str, 0, 0, null, parent));
      case Chr chr -> out.offer(new Frame(chr, 0, 0, null, parent));
      case Num num -> out.offer(new Frame(num, 0, 0, NumberRange.Digits.START, parent));
      case Until until -> out.offer(new Frame(until, 0, 0, null, parent));
      case FreeText free -> {
        out.offer(new Frame(free, 0, 0, null, parent));
        complete(parent, out, hops + 1); // it may end before any byte
      }
      case Seq seq -> {
        if (seq.items.length == 0) {
          complete(parent, out, hops + 1);
        } else {
          enter(seq.items[0], seqFrame(seq, 0, parent), out, hops + 1);
        }
      }
      case Alt alt -> {
        for (GrammarNode a : alt.alts) {
          enter(a, parent, out, hops + 1);
        }
      }
      case Rep rep -> {
        if (minItems(rep) == 0) {
          complete(parent, out, hops + 1);
        }
        if (rep.max > 0) {
          enter(rep.item, iteration(rep, 0, parent, out), out, hops + 1);
        }
      }
      case Ref ref -> enter(ref.target, parent, out, hops + 1);
    }
  }

  /** The child of {@code parent} is complete: continue after it. */
  private void complete(Frame parent, Closure out, int hops) {
    if (out.exhausted()) {
      return;
    }
    if (parent == null) {
      out.offer(Frame.ACCEPT);
      return;
    }
    switch (parent.node) {
      case Seq seq -> {
        int next = parent.pos + 1;
        if (next < seq.items.length) {
          enter(seq.items[next], seqFrame(seq, next, parent.parent), out, hops + 1);
        } else {
          complete(parent.parent, out, hops + 1);
        }
      }
      case Rep rep -> {
        if (parent.aux == ITEM) {
          int done = parent.pos + 1;
          if (done >= minItems(rep)) {
            complete(parent.parent, out, hops + 1);
          }
          // An item begun in this step has matched nothing: going round again would add no text.
          if (done < rep.max && !out.begunInThisStep(parent)) {
            // With no max, counts from min − 1 on finish alike (the next item reaches min): keep
            // their states equal, or nested repetitions ((x+)+…) tell 2^depth of them apart.
            int count = rep.max == Integer.MAX_VALUE ? Math.min(done, Math.max(0, minItems(rep) - 1)) : done;
            if (rep.separator != null) {
              enter(rep.separator, new Frame(rep, count, SEPARATOR, null, parent.parent), out, hops + 1);
            } else {
              enter(rep.item, iteration(rep, count, parent.parent, out), out, hops + 1);
            }
          }
        } else {
          enter(rep.item, iteration(rep, parent.pos, parent.parent, out), out, hops + 1);
        }
      }
      default -> throw new IllegalStateException("not a composite: " + parent.node);
    }
  }

  /**
   * The fewest items the matcher requires of {@code rep}: none where an item (and a separator)
   * can match nothing — the same text either way, and counting them would tell apart states that
   * are the same (nested, {@code ""++…} doubles them at each level).
   */
  private static int minItems(Rep rep) {
    return rep.item.minLen == 0 && (rep.separator == null || rep.separator.minLen == 0) ? 0 : rep.min;
  }

  /**
   * The frame that continues {@code seq} after its item {@code i}. In a text grammar, for the last
   * item, the sequence's own parent (nothing of it is left), so that right recursion — a rule that
   * ends by naming itself, a list of choices sharing prefixes — does not deepen the state. (Schema
   * grammars keep the frame: their token masks, cached per frame, were measured 3–10× slower at
   * the p99 without it, and their recursion is bounded by brackets.)
   */
  private Frame seqFrame(Seq seq, int i, Frame parent) {
    return tailCalls && i == seq.items.length - 1 ? parent : new Frame(seq, i, 0, null, parent);
  }

  /**
   * The frame for item {@code count} of {@code rep}; where the item can match nothing (and so can
   * the separator), noted in {@code out} as begun in this step.
   */
  private static Frame iteration(Rep rep, int count, Frame parent, Closure out) {
    Frame f = new Frame(rep, count, ITEM, null, parent);
    if (minItems(rep) == 0 && rep.item.minLen == 0) {
      out.begin(f);
    }
    return f;
  }

  /**
   * The states one step reaches. A repetition whose item can match nothing could go round without
   * consuming a byte: an item begun in this step that completes in it matched nothing, and does
   * not go round again ({@link #begunInThisStep}); otherwise alternatives inside the item would
   * branch at every turn (2^n ways through {@code (a?|b?)*}). In a text grammar, written by users,
   * every node is also entered at most once per step from the same place ({@link #firstEnter}).
   *
   * <p>Holds each state once, only states that fit the depth bound ({@link #fits}), and at most the
   * grammar's {@code maxStates}; the walk stops once it is full or has made the grammar's {@link
   * #stepWork} entries and completions (nested ambiguous repetitions, {@code ((x{0,9}b?){0,9}b?)…},
   * a pattern inside a schema among them, would otherwise walk 9^depth ways, most to states already
   * found, before any are dropped). Like the text grammars' cap, stopping early only drops some parses of an
   * ambiguous prefix: each state kept is a way to a valid end.
   */
  private static final class Closure extends ArrayList<Frame> {
    private static final int ENTERED = -1; // the aux of a key for firstEnter, no frame's
    /** Past this many states, membership is looked up in {@link #members} rather than scanned. */
    private static final int SCANNED = 64;
    private final int limit;
    private final int work;
    private final int safeDepth;
    private final boolean tailCalls;
    private int spent;
    private java.util.HashSet<Frame> members;
    private java.util.HashSet<Frame> entered;
    private java.util.Set<Frame> begun;

    Closure(int limit, int work, int safeDepth, boolean tailCalls) {
      super(2);
      this.limit = limit;
      this.work = work;
      this.safeDepth = safeDepth;
      this.tailCalls = tailCalls;
    }

    /** Whether the walk should stop here: the closure is full or its budget is spent (counts a step). */
    boolean exhausted() {
      return size() >= limit || ++spent > work;
    }

    /** Adds {@code f} unless it is here already, cannot reach the end within the depth bound, or there is no room. */
    void offer(Frame f) {
      if (size() >= limit || (f.depth > safeDepth && !fits(f, tailCalls))) {
        return;
      }
      if (members != null) {
        if (members.add(f)) {
          add(f);
        }
        return;
      }
      for (int i = 0; i < size(); i++) {
        if (get(i).equals(f)) {
          return;
        }
      }
      add(f);
      if (size() > SCANNED) {
        members = new java.util.HashSet<>(this);
      }
    }

    void begin(Frame iteration) {
      if (begun == null) {
        begun = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
      }
      begun.add(iteration);
    }

    boolean begunInThisStep(Frame iteration) {
      return begun != null && begun.contains(iteration);
    }

    boolean firstEnter(GrammarNode node, Frame parent) {
      if (entered == null) {
        entered = new java.util.HashSet<>();
      }
      return entered.add(new Frame(node, 0, ENTERED, null, parent));
    }
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
      case Until until -> cappedAtInf(until.scan.distance(until.which, f.pos)); // to the end of its text
      case FreeText free -> 0;
      default -> 1;
    };
  }

  /** A distance, {@link Integer#MAX_VALUE} (unreachable) included, as this class counts: at most {@link #INF}. */
  private static int cappedAtInf(int distance) {
    return Math.min(INF, distance);
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

  /** Fills in every node's {@code minLen}; returns all nodes. */
  private static List<GrammarNode> computeMinLengths(GrammarNode root) {
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
    return all;
  }

  // ---- depth: what the rest of a parse needs, to a fixed point ----

  /**
   * Fills in every node's {@code depthNeed}: over the ways through it, the fewest levels of
   * frames opened below its parent at the deepest point (what {@link #enter} checks against
   * {@link #MAX_DEPTH}). With {@code tailCalls}, a sequence's last item replaces the sequence
   * (see {@link #seqFrame}). Returns the largest finite need.
   */
  private static int computeDepthNeeds(List<GrammarNode> all, boolean tailCalls) {
    for (GrammarNode n : all) {
      n.depthNeed = INF;
    }
    boolean changed = true;
    while (changed) {
      changed = false;
      for (GrammarNode n : all) {
        int v = depthNeed(n, tailCalls);
        if (v < n.depthNeed) {
          n.depthNeed = v;
          changed = true;
        }
      }
    }
    int deepest = 0;
    for (GrammarNode n : all) {
      if (n.depthNeed < INF) {
        deepest = Math.max(deepest, n.depthNeed);
      }
    }
    return deepest;
  }

  private static int depthNeed(GrammarNode n, boolean tailCalls) {
    return switch (n) {
      case Seq seq -> {
        int k = seq.items.length;
        if (k == 0) {
          yield 1;
        }
        int need = tailCalls ? seq.items[k - 1].depthNeed : plusOne(seq.items[k - 1].depthNeed);
        for (int i = 0; i < k - 1; i++) {
          need = Math.max(need, plusOne(seq.items[i].depthNeed));
        }
        yield Math.max(1, need);
      }
      case Alt alt -> {
        int best = INF;
        for (GrammarNode a : alt.alts) {
          best = Math.min(best, a.depthNeed);
        }
        yield best;
      }
      case Rep rep -> minItems(rep) == 0 ? 1
          : Math.max(plusOne(rep.item.depthNeed), rep.separator != null && minItems(rep) > 1 ? plusOne(rep.separator.depthNeed) : 1);
      case Ref ref -> Math.max(1, ref.target.depthNeed);
      default -> 1; // a terminal: its own frame
    };
  }

  private static int plusOne(int need) {
    return need >= INF ? INF : need + 1;
  }

  /**
   * Whether the parse that {@code f} stands for can still reach the end within {@link #MAX_DEPTH}:
   * each node its ancestors must still enter, entered where they would enter it, has room for its
   * {@code depthNeed}. Cached on each frame (frames are immutable; a race computes the same).
   */
  private static boolean fits(Frame f, boolean tailCalls) {
    if (f.node == null) {
      return true;
    }
    if (f.restFits == 0) {
      f.restFits = (byte) (restFits(f, tailCalls) && (f.parent == null || fits(f.parent, tailCalls)) ? 1 : 2);
    }
    return f.restFits == 1;
  }

  /** Room for what {@code a}'s own node still has to enter after its current child (not its ancestors'). */
  private static boolean restFits(Frame a, boolean tailCalls) {
    int parentDepth = a.depth - 1;
    return switch (a.node) {
      case Seq seq -> {
        int k = seq.items.length;
        int last = tailCalls ? k - 1 : k; // the last item, entered from the parent instead
        for (int i = a.pos + 1; i < last; i++) {
          if (a.depth + seq.items[i].depthNeed > MAX_DEPTH) {
            yield false;
          }
        }
        yield !tailCalls || a.pos + 1 >= k || parentDepth + seq.items[k - 1].depthNeed <= MAX_DEPTH;
      }
      case Rep rep -> {
        int items = Math.max(0, minItems(rep) - a.pos - (a.aux == ITEM ? 1 : 0));
        boolean item = a.aux == SEPARATOR || items > 0;
        boolean separator = rep.separator != null && items > (a.aux == SEPARATOR ? 1 : 0);
        yield (!item || a.depth + rep.item.depthNeed <= MAX_DEPTH)
            && (!separator || a.depth + rep.separator.depthNeed <= MAX_DEPTH);
      }
      default -> true; // a terminal: the bytes it still takes open nothing
    };
  }

  // ---- left recursion (text grammars) ----

  /**
   * Throws if a {@link Ref} can reach itself before any byte is matched (the matcher would only
   * unfold it to its depth limit). Edges between Refs are found once each, then the graph of Refs
   * is searched for a cycle.
   */
  private static void refuseLeftRecursion(List<GrammarNode> all) {
    IdentityHashMap<Ref, List<Ref>> edges = new IdentityHashMap<>();
    for (GrammarNode n : all) {
      if (n instanceof Ref ref) {
        List<Ref> first = new ArrayList<>();
        leftRefs(ref.target, first, new IdentityHashMap<>());
        edges.put(ref, first);
      }
    }
    IdentityHashMap<Ref, Boolean> done = new IdentityHashMap<>(); // false: on the current path
    for (Ref r : edges.keySet()) {
      Ref cycle = findCycle(r, edges, done);
      if (cycle != null) {
        throw new GrammarException("", "the rule '" + cycle.name + "' is left-recursive (it can reach itself before"
            + " matching any text); write the repetition with * or + instead");
      }
    }
  }

  /** The Refs that {@code n} can enter before matching a byte (stops at each Ref). */
  private static void leftRefs(GrammarNode n, List<Ref> out, IdentityHashMap<GrammarNode, Boolean> seen) {
    if (seen.put(n, Boolean.TRUE) != null) {
      return;
    }
    switch (n) {
      case Ref ref -> out.add(ref);
      case Seq seq -> {
        for (GrammarNode i : seq.items) {
          leftRefs(i, out, seen);
          if (i.minLen > 0) {
            return;
          }
        }
      }
      case Alt alt -> {
        for (GrammarNode a : alt.alts) {
          leftRefs(a, out, seen);
        }
      }
      case Rep rep -> {
        if (rep.max > 0) {
          leftRefs(rep.item, out, seen);
          if (rep.item.minLen == 0 && rep.separator != null) {
            leftRefs(rep.separator, out, seen);
          }
        }
      }
      default -> { }
    }
  }

  private static Ref findCycle(Ref r, IdentityHashMap<Ref, List<Ref>> edges, IdentityHashMap<Ref, Boolean> done) {
    Boolean state = done.get(r);
    if (state != null) {
      return state ? null : r;
    }
    done.put(r, Boolean.FALSE);
    for (Ref next : edges.get(r)) {
      Ref cycle = findCycle(next, edges, done);
      if (cycle != null) {
        return cycle;
      }
    }
    done.put(r, Boolean.TRUE);
    return null;
  }

  private static int minLength(GrammarNode n) {
    return switch (n) {
      case Lit lit -> lit.bytes.length;
      case ByteSet set -> 1;
      case Str str -> 2 + str.minChars;
      case Chr chr -> 1;
      case Num num -> 1;
      case Until until -> cappedAtInf(until.scan.distance(until.which, 0));
      case FreeText free -> 0;
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
