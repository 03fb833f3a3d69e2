package dev.tandem.engine.grammar;

import dev.tandem.engine.grammar.GrammarNode.Alt;
import dev.tandem.engine.grammar.GrammarNode.Chr;
import dev.tandem.engine.grammar.GrammarNode.Lit;
import dev.tandem.engine.grammar.GrammarNode.Ref;
import dev.tandem.engine.grammar.GrammarNode.Seq;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Compiles a context-free grammar in the EBNF notation that vLLM's {@code
 * structured_outputs.grammar} takes (xgrammar's, llama.cpp's GBNF) into a {@link Grammar} of the
 * whole output:
 *
 * <pre>
 * root   ::= answer ("," ws answer)*      # the output is what "root" matches
 * answer ::= "yes" | "no" | [0-9]+
 * ws     ::= [ \t]*
 * </pre>
 *
 * <p>Rules {@code name ::= …} (names of letters, digits, {@code _} and {@code -}; a rule ends
 * where the next {@code name ::=} starts); strings in double quotes with the escapes {@code \n \r
 * \t \\ \" \xHH \\uHHHH}; character classes {@code [a-z_]}, {@code [^"\\]} (ASCII members; a
 * negated class also matches every non-ASCII character); {@code .} (any character); groups
 * {@code ( )}; {@code |}; the quantifiers {@code * + ?} and {@code {m} {m,} {m,n}}; comments
 * from {@code #} to the end of the line. Recursion is allowed except on the left (a rule that can
 * reach itself before matching any text). Limits: {@value JsonSchemaGrammar#MAX_NODES} nodes,
 * groups nested {@value #MAX_NESTING} deep, repetition counts up to {@value Repetition#MAX_REPEAT}.
 * Anything else is refused with a {@link GrammarException} naming the line and column.
 *
 * <p>Not thread-safe; one instance per grammar text (use {@link #compile}).
 */
final class EbnfGrammar {
  static final int MAX_NESTING = 64;
  private final String text;
  private final Map<String, Ref> rules = new LinkedHashMap<>();
  private final Map<String, Integer> referencedAt = new LinkedHashMap<>();
  private int at;
  private int nodes;

  private EbnfGrammar(String text) {
    this.text = text;
  }

  /** The grammar of {@code prefix}, text matching {@code ebnf}'s rule {@code root}, then {@code suffix}. */
  static Grammar compile(String prefix, String ebnf, String suffix) {
    return Grammar.ofText(root(prefix, ebnf, suffix), "grammar");
  }

  /** The root node of {@link #compile}'s grammar. */
  static GrammarNode root(String prefix, String ebnf, String suffix) {
    EbnfGrammar g = new EbnfGrammar(ebnf);
    g.parseRules();
    Ref root = g.rules.get("root");
    if (root == null) {
      throw new GrammarException("", "the grammar has no rule named 'root' (the rule the output must match)");
    }
    for (Map.Entry<String, Integer> use : g.referencedAt.entrySet()) {
      if (g.rules.get(use.getKey()).target == null) {
        throw g.error(use.getValue(), "the rule '" + use.getKey() + "' is used but never defined");
      }
    }
    return OutputGrammars.around(prefix, root, suffix);
  }

  private void parseRules() {
    skipSpace();
    if (at >= text.length()) {
      throw new GrammarException("", "the grammar is empty");
    }
    while (at < text.length()) {
      int start = at;
      String name = name();
      if (name.isEmpty()) {
        throw error(start, "expected a rule name");
      }
      skipSpace();
      if (!text.startsWith("::=", at)) {
        throw error(at, "expected '::=' after the rule name '" + name + "'");
      }
      at += 3;
      Ref rule = rules.computeIfAbsent(name, Ref::new);
      if (rule.target != null) {
        throw error(start, "the rule '" + name + "' is defined twice");
      }
      rule.target = alternation(0);
      skipSpace();
      if (at < text.length() && !atRuleStart()) {
        throw error(at, "unexpected '" + text.charAt(at) + "'");
      }
    }
  }

  private GrammarNode alternation(int depth) {
    List<GrammarNode> alts = new ArrayList<>();
    alts.add(sequence(depth));
    skipSpace();
    while (at < text.length() && text.charAt(at) == '|') {
      at++;
      alts.add(sequence(depth));
      skipSpace();
    }
    if (alts.size() > 1 && alts.stream().allMatch(a -> a instanceof Lit)) {
      return node(OutputGrammars.literals(alts.stream().map(a -> ((Lit) a).bytes).toList()));
    }
    return alts.size() == 1 ? alts.get(0) : node(new Alt(alts.toArray(GrammarNode[]::new)));
  }

  private GrammarNode sequence(int depth) {
    List<GrammarNode> items = new ArrayList<>();
    while (true) {
      skipSpace();
      if (at >= text.length() || text.charAt(at) == '|' || text.charAt(at) == ')' || atRuleStart()) {
        break;
      }
      items.add(quantified(primary(depth), depth));
    }
    return items.size() == 1 ? items.get(0) : node(new Seq(items.toArray(GrammarNode[]::new)));
  }

  private GrammarNode quantified(GrammarNode item, int depth) {
    GrammarNode n = item;
    while (true) {
      skipSpace();
      if (at >= text.length()) {
        return n;
      }
      int start = at;
      Repetition r = text.charAt(at) == '{' ? Repetition.parse(text, at, what -> error(start, what)) : Repetition.symbol(text.charAt(at), at);
      if (r == null) {
        return n;
      }
      at = r.end();
      n = node(r.over(n));
    }
  }

  private GrammarNode primary(int depth) {
    int start = at;
    char c = text.charAt(at);
    switch (c) {
      case '"' -> {
        return string();
      }
      case '[' -> {
        return charClass();
      }
      case '.' -> {
        at++;
        long[] set = new long[] {~1L, ~0L}; // every ASCII character but NUL
        return node(new Chr(set, true, true));
      }
      case '(' -> {
        if (depth >= MAX_NESTING) {
          throw error(start, "groups are nested more than " + MAX_NESTING + " deep");
        }
        at++;
        GrammarNode inner = alternation(depth + 1);
        skipSpace();
        if (at >= text.length() || text.charAt(at) != ')') {
          throw error(start, "unclosed '('");
        }
        at++;
        return inner;
      }
      default -> {
        String name = name();
        if (name.isEmpty()) {
          throw error(start, "unexpected '" + c + "'" + (c == '\'' ? " (strings are written in double quotes)" : ""));
        }
        referencedAt.putIfAbsent(name, start);
        return rules.computeIfAbsent(name, Ref::new);
      }
    }
  }

  private GrammarNode string() {
    int start = at;
    at++; // the opening quote
    StringBuilder s = new StringBuilder();
    while (true) {
      if (at >= text.length() || text.charAt(at) == '\n') {
        throw error(start, "unclosed string");
      }
      char c = text.charAt(at++);
      if (c == '"') {
        break;
      }
      s.appendCodePoint(c == '\\' ? escape() : c);
    }
    return node(new Lit(s.toString().getBytes(StandardCharsets.UTF_8)));
  }

  private GrammarNode charClass() {
    int start = at;
    at++; // '['
    boolean negated = at < text.length() && text.charAt(at) == '^';
    if (negated) {
      at++;
    }
    long[] set = new long[2];
    while (true) {
      if (at >= text.length() || text.charAt(at) == '\n') {
        throw error(start, "unclosed '['");
      }
      char c = text.charAt(at++);
      if (c == ']') {
        break;
      }
      int lo = c == '\\' ? escape() : c;
      int hi = lo;
      if (at + 1 < text.length() && text.charAt(at) == '-' && text.charAt(at + 1) != ']') {
        at++;
        char h = text.charAt(at++);
        hi = h == '\\' ? escape() : h;
        if (hi < lo) {
          throw error(start, "a range in the class is out of order");
        }
      }
      if (lo >= 128 && negated) {
        throw error(start, "a negated class matches every non-ASCII character already; non-ASCII members are not supported");
      }
      if (hi >= 128) {
        throw error(start, "non-ASCII characters in classes are not supported (write them as strings: \"é\" | \"ü\")");
      }
      for (int x = lo; x <= hi; x++) {
        set[x >>> 6] |= 1L << x;
      }
    }
    if (negated) {
      set = new long[] {~set[0] & ~1L, ~set[1]};
    }
    return node(new Chr(set, negated, true));
  }

  /** The character after a backslash (the backslash already read). */
  private int escape() {
    if (at >= text.length()) {
      throw error(at, "trailing backslash");
    }
    char e = text.charAt(at++);
    return switch (e) {
      case 'n' -> '\n';
      case 'r' -> '\r';
      case 't' -> '\t';
      case 'x' -> hex(2);
      case 'u' -> hex(4);
      case 'U' -> hex(8);
      default -> {
        if (Character.isLetterOrDigit(e)) {
          throw error(at - 2, "the escape '\\" + e + "' is not supported");
        }
        yield e;
      }
    };
  }

  private int hex(int digits) {
    if (at + digits > text.length()) {
      throw error(at, "expected " + digits + " hex digits");
    }
    try {
      int v = Integer.parseUnsignedInt(text.substring(at, at + digits), 16);
      if (!Character.isValidCodePoint(v) || (v >= 0xd800 && v <= 0xdfff) || v == 0) {
        throw error(at, "the escape names no character");
      }
      at += digits;
      return v;
    } catch (NumberFormatException e) {
      throw error(at, "expected " + digits + " hex digits");
    }
  }

  private String name() {
    int start = at;
    while (at < text.length()) {
      char c = text.charAt(at);
      if (!(c < 128 && (Character.isLetterOrDigit(c) || c == '_' || c == '-'))) {
        break;
      }
      at++;
    }
    return text.substring(start, at);
  }

  /** Whether {@code name ::=} starts here (the current rule has ended). */
  private boolean atRuleStart() {
    int save = at;
    try {
      if (name().isEmpty()) {
        return false;
      }
      skipSpace();
      return text.startsWith("::=", at);
    } finally {
      at = save;
    }
  }

  private void skipSpace() {
    while (at < text.length()) {
      char c = text.charAt(at);
      if (c == '#') {
        while (at < text.length() && text.charAt(at) != '\n') {
          at++;
        }
      } else if (Character.isWhitespace(c)) {
        at++;
      } else {
        return;
      }
    }
  }

  private GrammarNode node(GrammarNode n) {
    if (++nodes > JsonSchemaGrammar.MAX_NODES) {
      throw new GrammarException("", "the grammar is larger than " + JsonSchemaGrammar.MAX_NODES + " nodes");
    }
    return n;
  }

  private GrammarException error(int where, String what) {
    int line = 1;
    int lineStart = 0;
    for (int i = 0; i < where && i < text.length(); i++) {
      if (text.charAt(i) == '\n') {
        line++;
        lineStart = i + 1;
      }
    }
    return new GrammarException("", "line " + line + ", column " + (where - lineStart + 1) + ": " + what);
  }
}
