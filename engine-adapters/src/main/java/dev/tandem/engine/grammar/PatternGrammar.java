package dev.tandem.engine.grammar;

import dev.tandem.engine.grammar.GrammarNode.Alt;
import dev.tandem.engine.grammar.GrammarNode.Chr;
import dev.tandem.engine.grammar.GrammarNode.Lit;
import dev.tandem.engine.grammar.GrammarNode.Rep;
import dev.tandem.engine.grammar.GrammarNode.Seq;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The characters of a JSON string matching a regular expression (JSON schema's {@code pattern},
 * ECMA-262 semantics: unanchored unless it starts with {@code ^} / ends with {@code $}), or — as
 * {@link #compileText} — plain text that a regular expression matches whole (vLLM's {@code
 * structured_outputs.regex}; there non-ASCII literals are allowed too).
 *
 * <p>Supported: literals, {@code .}, classes {@code [a-z_]} and {@code [^…]}, {@code \d \w \s}
 * and their negations, escaped metacharacters, groups {@code (…)} and {@code (?:…)}, {@code |},
 * and the quantifiers {@code * + ? {n} {n,} {n,m}}. Character classes name ASCII characters;
 * {@code .} and negated classes also match any non-ASCII character. Not supported (refused):
 * backreferences, lookaround, lazy quantifiers, anchors inside the pattern, Unicode classes, groups
 * nested more than {@value EbnfGrammar#MAX_NESTING} deep.
 *
 * <p>Not thread-safe; one instance per pattern.
 */
final class PatternGrammar {
  private final String pattern;
  private final String path;
  private final boolean raw;
  private int at;
  /** Groups open around {@link #at}: bounded as an EBNF grammar's are, so that parsing and matching stay shallow. */
  private int depth;

  private PatternGrammar(String pattern, String path, boolean raw) {
    this.pattern = pattern;
    this.path = path;
    this.raw = raw;
  }

  /**
   * Plain text (not a JSON string's escaped body) that {@code pattern} matches as a whole: the
   * output is the match, so {@code ^} and {@code $} at its ends change nothing.
   */
  static GrammarNode compileText(String pattern, String path) {
    String p = pattern;
    if (p.startsWith("^")) {
      p = p.substring(1);
    }
    if (p.endsWith("$") && !p.endsWith("\\$")) {
      p = p.substring(0, p.length() - 1);
    }
    PatternGrammar g = new PatternGrammar(p, path, true);
    GrammarNode body = g.alternation();
    if (g.at < p.length()) {
      throw g.error("unexpected '" + p.charAt(g.at) + "'");
    }
    return body;
  }

  static GrammarNode compile(String pattern, String path) {
    String p = pattern;
    boolean anchoredStart = p.startsWith("^");
    if (anchoredStart) {
      p = p.substring(1);
    }
    boolean anchoredEnd = p.endsWith("$") && !p.endsWith("\\$");
    if (anchoredEnd) {
      p = p.substring(0, p.length() - 1);
    }
    PatternGrammar g = new PatternGrammar(p, path, false);
    GrammarNode body = g.alternation();
    if (g.at < p.length()) {
      throw g.error("unexpected '" + p.charAt(g.at) + "'");
    }
    GrammarNode anything = new Rep(g.dot(), null, 0, Integer.MAX_VALUE);
    List<GrammarNode> parts = new ArrayList<>();
    if (!anchoredStart) {
      parts.add(anything);
    }
    parts.add(body);
    if (!anchoredEnd) {
      parts.add(anything);
    }
    return parts.size() == 1 ? body : new Seq(parts.toArray(GrammarNode[]::new));
  }

  /** The pattern for a supported {@code format}, or a GrammarException naming it. */
  static String forFormat(String format, String path) {
    String date = "\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|1\\d|2[0-8])";
    String time = "([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,6})?(Z|[+-](0\\d|1[0-7]):[0-5]\\d)";
    String octet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
    String word = "[a-z0-9]{1,20}";
    String label = "[a-z0-9]([a-z0-9-]{0,60}[a-z0-9])?"; // RFC 1123; four labels fit the 253 characters
    String h16 = "[0-9a-f]{1,4}";
    String n = "\\d{1,9}";
    String days = "(" + n + "Y(" + n + "M)?(" + n + "D)?|" + n + "M(" + n + "D)?|" + n + "D)";
    String hours = "T(" + n + "H(" + n + "M)?(" + n + "S)?|" + n + "M(" + n + "S)?|" + n + "S)";
    return switch (format) {
      case "date" -> "^" + date + "$";
      case "time" -> "^" + time + "$";
      case "date-time" -> "^" + date + "T" + time + "$";
      case "uuid" -> "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";
      case "email" -> "^" + word + "(\\." + word + "){0,2}@" + word + "(\\." + word + "){0,2}\\.(com|org|net|io|dev|edu)$";
      case "ipv4" -> "^(" + octet + "\\.){3}" + octet + "$";
      // RFC 4291's text forms, lower case, "::" for one run of zero groups; no embedded IPv4, no zone
      case "ipv6" -> "^((" + h16 + ":){7}" + h16 + "|(" + h16 + ":){1,7}:|(" + h16 + ":){1,6}:" + h16
          + "|(" + h16 + ":){1,5}(:" + h16 + "){1,2}|(" + h16 + ":){1,4}(:" + h16 + "){1,3}|(" + h16 + ":){1,3}(:" + h16
          + "){1,4}|(" + h16 + ":){1,2}(:" + h16 + "){1,5}|" + h16 + ":(:" + h16 + "){1,6}|:((:" + h16 + "){1,7}|:))$";
      case "hostname" -> "^" + label + "(\\." + label + "){0,3}$";
      // ISO 8601 durations (JSON Schema's "duration"): P1Y2M3DT4H5M6S, PT30M, P2W, each part at most 9 digits
      case "duration" -> "^P(" + days + "(" + hours + ")?|" + hours + "|" + n + "W)$";
      default -> throw new GrammarException(path, "the string format '" + format
          + "' is not supported (supported: date, time, date-time, duration, uuid, email, hostname, ipv4, ipv6)");
    };
  }

  private GrammarNode alternation() {
    List<GrammarNode> alts = new ArrayList<>();
    alts.add(sequence());
    while (at < pattern.length() && pattern.charAt(at) == '|') {
      at++;
      alts.add(sequence());
    }
    return alts.size() == 1 ? alts.get(0) : new Alt(alts.toArray(GrammarNode[]::new));
  }

  private GrammarNode sequence() {
    List<GrammarNode> items = new ArrayList<>();
    while (at < pattern.length() && pattern.charAt(at) != '|' && pattern.charAt(at) != ')') {
      items.add(quantified(atom()));
    }
    return items.size() == 1 ? items.get(0) : new Seq(items.toArray(GrammarNode[]::new));
  }

  private GrammarNode quantified(GrammarNode atom) {
    if (at >= pattern.length()) {
      return atom;
    }
    char c = pattern.charAt(at);
    Repetition r = c == '{' && at + 1 < pattern.length() && Character.isDigit(pattern.charAt(at + 1))
        ? Repetition.parse(pattern, at, this::error) : Repetition.symbol(c, at);
    if (r == null) {
      return atom;
    }
    at = r.end();
    if (at < pattern.length() && (pattern.charAt(at) == '?' || pattern.charAt(at) == '+')) {
      throw error("lazy and possessive quantifiers are not supported");
    }
    return r.over(atom);
  }

  private GrammarNode atom() {
    char c = pattern.charAt(at++);
    switch (c) {
      case '(' -> {
        if (pattern.startsWith("?:", at)) {
          at += 2;
        } else if (at < pattern.length() && pattern.charAt(at) == '?') {
          throw error("lookaround and named groups are not supported");
        }
        if (depth >= EbnfGrammar.MAX_NESTING) {
          throw error("groups are nested more than " + EbnfGrammar.MAX_NESTING + " deep");
        }
        depth++;
        GrammarNode inner = alternation();
        depth--;
        if (at >= pattern.length() || pattern.charAt(at) != ')') {
          throw error("unclosed '('");
        }
        at++;
        return inner;
      }
      case '.' -> {
        return dot();
      }
      case '[' -> {
        return charClass();
      }
      case '\\' -> {
        return escape();
      }
      case '^', '$' -> throw error("anchors are supported only at the start and end of the pattern");
      case '*', '+', '?', '{', ')' -> throw error("nothing to repeat before '" + c + "'");
      default -> {
        if (c >= 128 && raw) {
          int cp = pattern.codePointAt(at - 1);
          at += Character.charCount(cp) - 1;
          return new Lit(new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8));
        }
        if (c >= 128) {
          throw error("non-ASCII characters in patterns are not supported");
        }
        return single(c);
      }
    }
  }

  private GrammarNode escape() {
    if (at >= pattern.length()) {
      throw error("trailing backslash");
    }
    char e = pattern.charAt(at++);
    long[] set = new long[2];
    switch (e) {
      case 'd', 'w', 's' -> {
        addShorthand(set, e);
        return new Chr(set, false, raw);
      }
      case 'D', 'W', 'S' -> {
        addShorthand(set, Character.toLowerCase(e));
        return new Chr(complement(set), true, raw);
      }
      default -> {
        if (e >= 128 && raw) {
          at--;
          return atom(); // an escaped non-ASCII character is itself
        }
        if (e >= 128) {
          throw error("non-ASCII characters in patterns are not supported");
        }
        int lit = literalEscape(e);
        return single((char) lit);
      }
    }
  }

  private int literalEscape(char e) {
    return switch (e) {
      case 'n' -> '\n';
      case 't' -> '\t';
      case 'r' -> '\r';
      case 'f' -> '\f';
      default -> {
        if (Character.isLetterOrDigit(e)) {
          throw error("the escape '\\" + e + "' is not supported");
        }
        yield e;
      }
    };
  }

  private GrammarNode charClass() {
    boolean negated = at < pattern.length() && pattern.charAt(at) == '^';
    if (negated) {
      at++;
    }
    long[] set = new long[2];
    boolean first = true;
    while (true) {
      if (at >= pattern.length()) {
        throw error("unclosed '['");
      }
      char c = pattern.charAt(at++);
      if (c == ']' && !first) {
        break;
      }
      first = false;
      int lo;
      if (c == '\\') {
        if (at >= pattern.length()) {
          throw error("unclosed '['");
        }
        char e = pattern.charAt(at++);
        if ("dws".indexOf(e) >= 0) {
          addShorthand(set, e);
          continue;
        }
        if ("DWS".indexOf(e) >= 0) {
          throw error("negated shorthand classes inside [] are not supported");
        }
        lo = literalEscape(e);
      } else {
        lo = c;
      }
      int hi = lo;
      if (at + 1 < pattern.length() && pattern.charAt(at) == '-' && pattern.charAt(at + 1) != ']') {
        at++;
        char h = pattern.charAt(at++);
        if (h == '\\' && at >= pattern.length()) {
          throw error("unclosed '['");
        }
        hi = h == '\\' ? literalEscape(pattern.charAt(at++)) : h;
        if (hi < lo) {
          throw error("range out of order");
        }
      }
      if (hi >= 128) {
        throw error("non-ASCII characters in classes are not supported");
      }
      for (int x = lo; x <= hi; x++) {
        set[x >>> 6] |= 1L << x;
      }
    }
    return negated ? new Chr(complement(set), true, raw) : new Chr(set, false, raw);
  }

  private static void addShorthand(long[] set, char e) {
    for (int x = 0; x < 128; x++) {
      boolean in = switch (e) {
        case 'd' -> x >= '0' && x <= '9';
        case 'w' -> Character.isLetterOrDigit(x) || x == '_';
        default -> x == ' ' || x == '\t' || x == '\n' || x == '\r' || x == '\f' || x == 0x0b;
      };
      if (in) {
        set[x >>> 6] |= 1L << x;
      }
    }
  }

  private static long[] complement(long[] set) {
    return new long[] {~set[0] & ~1L, ~set[1]}; // never NUL
  }

  private GrammarNode single(char c) {
    long[] set = new long[2];
    set[c >>> 6] |= 1L << c;
    return new Chr(set, false, raw);
  }

  private GrammarNode dot() {
    long[] set = new long[2];
    for (int x = 1; x < 128; x++) {
      if (x != '\n') {
        set[x >>> 6] |= 1L << x;
      }
    }
    return new Chr(set, true, raw);
  }

  private GrammarException error(String what) {
    return new GrammarException(path, "the pattern '" + pattern + "' is not supported: " + what);
  }
}
