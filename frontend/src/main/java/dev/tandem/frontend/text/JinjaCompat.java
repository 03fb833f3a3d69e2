package dev.tandem.frontend.text;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Rewrites the Python-isms of Hugging Face chat templates into calls Jinjava understands, inside
 * {@code {{ }}} and {@code {% %}} tags only:
 *
 * <ul>
 *   <li>Python string and dict methods ({@code x.startswith(a)}, {@code s.strip('\n')}, {@code
 *       d.items()}, {@code ', '.join(l)}...) become {@code py_startswith(x, a)} and so on, with
 *       omitted optional arguments filled with {@code none};
 *   <li>slices ({@code m[::-1]}, {@code s[1:]}) become {@code py_slice(m, none, none, -1)};
 *   <li>keyword arguments in calls ({@code namespace(i=l|length - 1)}) get their value
 *       parenthesised, since Jinjava would otherwise bind the filter and the minus to the name.
 * </ul>
 *
 * Works on tokens, so string literals are never touched. One algorithm (a tokenizer and the
 * rewrites over its tokens), over 400 lines because each rewrite is spelled out. Stateless.
 */
final class JinjaCompat {
  /** Method name → number of arguments after the receiver that the py_ function takes. */
  static final Map<String, Integer> METHODS =
      Map.ofEntries(
          Map.entry("startswith", 1),
          Map.entry("endswith", 1),
          Map.entry("strip", 1),
          Map.entry("lstrip", 1),
          Map.entry("rstrip", 1),
          Map.entry("upper", 0),
          Map.entry("lower", 0),
          Map.entry("title", 0),
          Map.entry("capitalize", 0),
          Map.entry("split", 2),
          Map.entry("find", 1),
          Map.entry("count", 1),
          Map.entry("join", 1),
          Map.entry("items", 0),
          Map.entry("keys", 0),
          Map.entry("get", 2));

  private JinjaCompat() {}

  /** Rewrites every expression tag of a template. */
  static String rewrite(String template) {
    StringBuilder out = new StringBuilder(template.length() + 64);
    int i = 0;
    while (i < template.length()) {
      int open = nextTag(template, i);
      if (open < 0) {
        out.append(template, i, template.length());
        break;
      }
      String closer = template.startsWith("{{", open) ? "}}" : "%}";
      int bodyStart = open + 2;
      int close = findClose(template, bodyStart, closer);
      if (close < 0) {
        out.append(template, i, template.length());
        break;
      }
      out.append(template, i, bodyStart);
      String body = template.substring(bodyStart, close);
      if (closer.equals("%}") && isRawBlock(body)) {
        out.append(body);
      } else {
        out.append(rewriteExpression(body));
      }
      i = close;
    }
    return out.toString();
  }

  private static boolean isRawBlock(String body) {
    String b = body.strip().replaceFirst("^[-+]", "").strip();
    return b.startsWith("raw") || b.startsWith("endraw");
  }

  private static int nextTag(String s, int from) {
    int a = s.indexOf("{{", from);
    int b = s.indexOf("{%", from);
    if (a < 0) {
      return b;
    }
    if (b < 0) {
      return a;
    }
    return Math.min(a, b);
  }

  /** Finds the closing delimiter, skipping string literals. */
  private static int findClose(String s, int from, String closer) {
    int i = from;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == '\'' || c == '"') {
        i = skipString(s, i);
        continue;
      }
      if (s.startsWith(closer, i)) {
        return i;
      }
      // "-}}" and "-%}" end the tag too; the '-' stays part of the body.
      i++;
    }
    return -1;
  }

  private static int skipString(String s, int start) {
    char q = s.charAt(start);
    int i = start + 1;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == '\\') {
        i += 2;
        continue;
      }
      if (c == q) {
        return i + 1;
      }
      i++;
    }
    return s.length();
  }

  // ---- expression rewriting over tokens ----

  enum Kind {
    STR,
    NAME,
    NUM,
    OP,
    WS
  }

  record Tok(Kind kind, String text) {
    boolean is(String s) {
      return kind == Kind.OP && text.equals(s);
    }
  }

  static String rewriteExpression(String expr) {
    List<Tok> toks = tokenize(expr);
    boolean changed = true;
    while (changed) {
      changed = rewriteOneMethod(toks) || rewriteOneSlice(toks);
    }
    parenthesiseKeywordArguments(toks);
    StringBuilder sb = new StringBuilder();
    for (Tok t : toks) {
      sb.append(t.text());
    }
    return sb.toString();
  }

  static List<Tok> tokenize(String s) {
    List<Tok> toks = new ArrayList<>();
    int i = 0;
    while (i < s.length()) {
      char c = s.charAt(i);
      int j;
      if (c == '\'' || c == '"') {
        j = skipString(s, i);
        toks.add(new Tok(Kind.STR, s.substring(i, j)));
      } else if (Character.isWhitespace(c)) {
        j = i;
        while (j < s.length() && Character.isWhitespace(s.charAt(j))) {
          j++;
        }
        toks.add(new Tok(Kind.WS, s.substring(i, j)));
      } else if (Character.isLetter(c) || c == '_') {
        j = i;
        while (j < s.length() && (Character.isLetterOrDigit(s.charAt(j)) || s.charAt(j) == '_')) {
          j++;
        }
        toks.add(new Tok(Kind.NAME, s.substring(i, j)));
      } else if (Character.isDigit(c)) {
        j = i;
        while (j < s.length()
            && (Character.isDigit(s.charAt(j))
                || (s.charAt(j) == '.' && j + 1 < s.length() && Character.isDigit(s.charAt(j + 1))))) {
          j++;
        }
        toks.add(new Tok(Kind.NUM, s.substring(i, j)));
      } else {
        String two = i + 1 < s.length() ? s.substring(i, i + 2) : "";
        if (List.of("==", "!=", "<=", ">=", "**", "//").contains(two)) {
          j = i + 2;
        } else {
          j = i + 1;
        }
        toks.add(new Tok(Kind.OP, s.substring(i, j)));
      }
      i = j;
    }
    return toks;
  }

  private static boolean rewriteOneMethod(List<Tok> toks) {
    for (int i = 0; i + 2 < toks.size(); i++) {
      if (!toks.get(i).is(".")
          || toks.get(i + 1).kind() != Kind.NAME
          || !METHODS.containsKey(toks.get(i + 1).text())
          || !toks.get(i + 2).is("(")) {
        continue;
      }
      int recvStart = receiverStart(toks, i - 1);
      if (recvStart >= i) {
        continue;
      }
      String method = toks.get(i + 1).text();
      int open = i + 2;
      int close = matching(toks, open);
      if (close < 0) {
        return false;
      }
      List<Tok> receiver = new ArrayList<>(toks.subList(recvStart, i));
      List<Tok> args = new ArrayList<>(toks.subList(open + 1, close));
      int argc = countArguments(args);
      List<Tok> call = new ArrayList<>();
      call.add(new Tok(Kind.NAME, "py_" + method));
      call.add(new Tok(Kind.OP, "("));
      call.addAll(receiver);
      if (argc > 0) {
        call.add(new Tok(Kind.OP, ","));
        call.addAll(args);
      }
      for (int k = argc; k < METHODS.get(method); k++) {
        call.add(new Tok(Kind.OP, ","));
        call.add(new Tok(Kind.NAME, "none"));
      }
      call.add(new Tok(Kind.OP, ")"));
      replace(toks, recvStart, close, call);
      return true;
    }
    return false;
  }

  private static boolean rewriteOneSlice(List<Tok> toks) {
    for (int i = 0; i < toks.size(); i++) {
      if (!toks.get(i).is("[")) {
        continue;
      }
      int close = matching(toks, i);
      if (close < 0) {
        return false;
      }
      List<List<Tok>> parts = splitTopLevel(toks.subList(i + 1, close), ":");
      if (parts.size() < 2) {
        continue;
      }
      int recvStart = receiverStart(toks, i - 1);
      if (recvStart >= i) {
        continue; // a list literal, not a subscript
      }
      List<Tok> call = new ArrayList<>();
      call.add(new Tok(Kind.NAME, "py_slice"));
      call.add(new Tok(Kind.OP, "("));
      call.addAll(toks.subList(recvStart, i));
      for (int p = 0; p < 3; p++) {
        call.add(new Tok(Kind.OP, ","));
        List<Tok> part = p < parts.size() ? parts.get(p) : List.of();
        if (part.stream().allMatch(t -> t.kind() == Kind.WS)) {
          call.add(new Tok(Kind.NAME, "none"));
        } else {
          call.add(new Tok(Kind.OP, "("));
          call.addAll(part);
          call.add(new Tok(Kind.OP, ")"));
        }
      }
      call.add(new Tok(Kind.OP, ")"));
      replace(toks, recvStart, close, call);
      return true;
    }
    return false;
  }

  /** Wraps the value of every {@code name=value} argument of a call in parentheses. */
  private static void parenthesiseKeywordArguments(List<Tok> toks) {
    for (int i = 0; i < toks.size(); i++) {
      if (!toks.get(i).is("(") || i == 0) {
        continue;
      }
      int prev = skipWsBack(toks, i - 1);
      if (prev < 0 || toks.get(prev).kind() != Kind.NAME) {
        continue;
      }
      int close = matching(toks, i);
      if (close < 0) {
        return;
      }
      int argStart = i + 1;
      int depth = 0;
      for (int k = i + 1; k <= close; k++) {
        Tok t = toks.get(k);
        if (t.is("(") || t.is("[") || t.is("{")) {
          depth++;
        } else if ((t.is(")") || t.is("]") || t.is("}")) && depth > 0) {
          depth--;
        } else if (depth == 0 && (t.is(",") || k == close)) {
          int n = wrapKeywordValue(toks, argStart, k);
          close += n;
          k += n;
          argStart = k + 1;
        }
      }
    }
  }

  /** If tokens [from, to) are {@code name = value}, wraps value; returns tokens added. */
  private static int wrapKeywordValue(List<Tok> toks, int from, int to) {
    int n = skipWs(toks, from, to);
    if (n >= to || toks.get(n).kind() != Kind.NAME) {
      return 0;
    }
    int eq = skipWs(toks, n + 1, to);
    if (eq >= to || !toks.get(eq).is("=")) {
      return 0;
    }
    toks.add(to, new Tok(Kind.OP, ")"));
    toks.add(eq + 1, new Tok(Kind.OP, "("));
    return 2;
  }

  /** Start index of the postfix expression ending at {@code end} (inclusive). */
  private static int receiverStart(List<Tok> toks, int end) {
    int j = end;
    while (j >= 0) {
      Tok t = toks.get(j);
      if (t.is(")") || t.is("]")) {
        int open = matchingBack(toks, j);
        if (open < 0) {
          return end + 1;
        }
        j = open - 1;
        boolean callOrIndex =
            j >= 0
                && (toks.get(j).kind() == Kind.NAME
                    || toks.get(j).kind() == Kind.STR
                    || toks.get(j).is(")")
                    || toks.get(j).is("]"));
        if (!callOrIndex) {
          return open;
        }
        continue;
      }
      if (t.kind() == Kind.NAME || t.kind() == Kind.STR || t.kind() == Kind.NUM) {
        if (t.kind() == Kind.NAME && isKeyword(t.text())) {
          return j + 1;
        }
        if (j - 1 >= 0 && toks.get(j - 1).is(".")) {
          j -= 2;
          continue;
        }
        return j;
      }
      return j + 1;
    }
    return 0;
  }

  private static boolean isKeyword(String name) {
    return switch (name) {
      case "and", "or", "not", "in", "is", "if", "else", "for", "set", "elif", "return" -> true;
      default -> false;
    };
  }

  private static int countArguments(List<Tok> args) {
    if (args.stream().allMatch(t -> t.kind() == Kind.WS)) {
      return 0;
    }
    return splitTopLevel(args, ",").size();
  }

  private static List<List<Tok>> splitTopLevel(List<Tok> toks, String sep) {
    List<List<Tok>> parts = new ArrayList<>();
    List<Tok> cur = new ArrayList<>();
    int depth = 0;
    for (Tok t : toks) {
      if (t.is("(") || t.is("[") || t.is("{")) {
        depth++;
      } else if (t.is(")") || t.is("]") || t.is("}")) {
        depth--;
      }
      if (depth == 0 && t.is(sep)) {
        parts.add(cur);
        cur = new ArrayList<>();
      } else {
        cur.add(t);
      }
    }
    parts.add(cur);
    return parts;
  }

  private static int matching(List<Tok> toks, int open) {
    int depth = 0;
    for (int k = open; k < toks.size(); k++) {
      Tok t = toks.get(k);
      if (t.is("(") || t.is("[") || t.is("{")) {
        depth++;
      } else if (t.is(")") || t.is("]") || t.is("}")) {
        if (--depth == 0) {
          return k;
        }
      }
    }
    return -1;
  }

  private static int matchingBack(List<Tok> toks, int close) {
    int depth = 0;
    for (int k = close; k >= 0; k--) {
      Tok t = toks.get(k);
      if (t.is(")") || t.is("]") || t.is("}")) {
        depth++;
      } else if (t.is("(") || t.is("[") || t.is("{")) {
        if (--depth == 0) {
          return k;
        }
      }
    }
    return -1;
  }

  private static int skipWs(List<Tok> toks, int from, int to) {
    int k = from;
    while (k < to && toks.get(k).kind() == Kind.WS) {
      k++;
    }
    return k;
  }

  private static int skipWsBack(List<Tok> toks, int from) {
    int k = from;
    while (k >= 0 && toks.get(k).kind() == Kind.WS) {
      k--;
    }
    return k;
  }

  private static void replace(List<Tok> toks, int from, int toInclusive, List<Tok> with) {
    toks.subList(from, toInclusive + 1).clear();
    toks.addAll(from, with);
  }
}
