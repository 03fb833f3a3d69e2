package dev.tandem.frontend.text;

import java.util.Map;

/**
 * JSON as Python's {@code json.dumps(x, ensure_ascii=False)} writes it, which is what Hugging Face's
 * {@code tojson} filter produces: separators {@code ", "} and {@code ": "}, non-ASCII kept, key order
 * kept; with an indent, items on their own lines and separator {@code ","}. Stateless.
 */
final class PythonJson {
  private PythonJson() {}

  static String dumps(Object value, Integer indent) {
    StringBuilder sb = new StringBuilder();
    write(sb, value, indent, 0);
    return sb.toString();
  }

  private static void write(StringBuilder sb, Object v, Integer indent, int level) {
    switch (v) {
      case null -> sb.append("null");
      case Boolean b -> sb.append(b ? "true" : "false");
      case Double d when d.isNaN() -> sb.append("NaN");
      case Double d when d == Math.rint(d) && !d.isInfinite() && Math.abs(d) < 1e16 ->
          sb.append(String.format(java.util.Locale.ROOT, "%.1f", d));
      case Float f -> write(sb, f.doubleValue(), indent, level);
      case java.math.BigDecimal bd -> sb.append(bd.toPlainString());
      case Number n -> sb.append(n);
      case CharSequence s -> quote(sb, s.toString());
      case Character c -> quote(sb, c.toString());
      case Map<?, ?> m -> {
        if (m.isEmpty()) {
          sb.append("{}");
          return;
        }
        sb.append('{');
        boolean first = true;
        for (var e : m.entrySet()) {
          if (!first) {
            sb.append(indent == null ? ", " : ",");
          }
          first = false;
          newline(sb, indent, level + 1);
          quote(sb, String.valueOf(e.getKey()));
          sb.append(": ");
          write(sb, e.getValue(), indent, level + 1);
        }
        newline(sb, indent, level);
        sb.append('}');
      }
      case Iterable<?> it -> {
        var iter = it.iterator();
        if (!iter.hasNext()) {
          sb.append("[]");
          return;
        }
        sb.append('[');
        boolean first = true;
        while (iter.hasNext()) {
          if (!first) {
            sb.append(indent == null ? ", " : ",");
          }
          first = false;
          newline(sb, indent, level + 1);
          write(sb, iter.next(), indent, level + 1);
        }
        newline(sb, indent, level);
        sb.append(']');
      }
      case Object[] arr -> write(sb, java.util.Arrays.asList(arr), indent, level);
      default -> quote(sb, v.toString());
    }
  }

  private static void newline(StringBuilder sb, Integer indent, int level) {
    if (indent != null) {
      sb.append('\n').append(" ".repeat(indent * level));
    }
  }

  private static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }
}
