package dev.tandem.frontend.text;

import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Python semantics for the calls {@link JinjaCompat} produces, registered as Jinjava functions.
 * Receivers that are not strings or maps are treated as their string form. Stateless.
 */
public final class PyFunctions {
  private PyFunctions() {}

  private static String str(Object o) {
    return o == null ? "" : o.toString();
  }

  public static boolean startswith(Object s, Object prefix) {
    return s != null && str(s).startsWith(str(prefix));
  }

  public static boolean endswith(Object s, Object suffix) {
    return s != null && str(s).endsWith(str(suffix));
  }

  public static String strip(Object s, Object chars) {
    return rstrip(lstrip(s, chars), chars);
  }

  public static String lstrip(Object s, Object chars) {
    String v = str(s);
    int i = 0;
    while (i < v.length() && stripped(v.charAt(i), chars)) {
      i++;
    }
    return v.substring(i);
  }

  public static String rstrip(Object s, Object chars) {
    String v = str(s);
    int j = v.length();
    while (j > 0 && stripped(v.charAt(j - 1), chars)) {
      j--;
    }
    return v.substring(0, j);
  }

  private static boolean stripped(char c, Object chars) {
    return chars == null ? Character.isWhitespace(c) : str(chars).indexOf(c) >= 0;
  }

  public static String upper(Object s) {
    return str(s).toUpperCase(Locale.ROOT);
  }

  public static String lower(Object s) {
    return str(s).toLowerCase(Locale.ROOT);
  }

  public static String capitalize(Object s) {
    String v = str(s);
    return v.isEmpty() ? v : v.substring(0, 1).toUpperCase(Locale.ROOT) + v.substring(1).toLowerCase(Locale.ROOT);
  }

  public static String title(Object s) {
    StringBuilder sb = new StringBuilder();
    boolean start = true;
    for (char c : str(s).toCharArray()) {
      sb.append(start ? Character.toUpperCase(c) : Character.toLowerCase(c));
      start = !Character.isLetter(c);
    }
    return sb.toString();
  }

  /** Python's str.split: literal separator (not a regex), or whitespace runs when none. */
  public static List<String> split(Object s, Object sep, Object maxsplit) {
    String v = str(s);
    int max = maxsplit == null ? -1 : ((Number) maxsplit).intValue();
    List<String> out = new ArrayList<>();
    if (sep == null) {
      String rest = v.strip();
      while (!rest.isEmpty()) {
        if (max >= 0 && out.size() == max) {
          out.add(rest);
          return out;
        }
        int k = 0;
        while (k < rest.length() && !Character.isWhitespace(rest.charAt(k))) {
          k++;
        }
        out.add(rest.substring(0, k));
        rest = rest.substring(k).stripLeading();
      }
      return out;
    }
    String d = str(sep);
    if (d.isEmpty()) {
      throw new IllegalArgumentException("empty separator");
    }
    int from = 0;
    int at;
    while ((max < 0 || out.size() < max) && (at = v.indexOf(d, from)) >= 0) {
      out.add(v.substring(from, at));
      from = at + d.length();
    }
    out.add(v.substring(from));
    return out;
  }

  public static long find(Object s, Object sub) {
    return str(s).indexOf(str(sub));
  }

  public static long count(Object s, Object sub) {
    if (s instanceof Collection<?> c) {
      return c.stream().filter(x -> java.util.Objects.equals(x, sub)).count();
    }
    String v = str(s);
    String d = str(sub);
    if (d.isEmpty()) {
      return v.length() + 1;
    }
    long n = 0;
    for (int at = v.indexOf(d); at >= 0; at = v.indexOf(d, at + d.length())) {
      n++;
    }
    return n;
  }

  public static String join(Object sep, Object items) {
    List<String> parts = new ArrayList<>();
    if (items instanceof Iterable<?> it) {
      it.forEach(x -> parts.add(str(x)));
    } else if (items instanceof Object[] arr) {
      for (Object x : arr) {
        parts.add(str(x));
      }
    } else {
      parts.add(str(items));
    }
    return String.join(str(sep), parts);
  }

  public static List<List<Object>> items(Object map) {
    List<List<Object>> out = new ArrayList<>();
    if (map instanceof Map<?, ?> m) {
      m.forEach((k, v) -> out.add(java.util.Arrays.asList(k, v)));
    }
    return out;
  }

  public static List<Object> keys(Object map) {
    return map instanceof Map<?, ?> m ? new ArrayList<>(m.keySet()) : List.of();
  }

  public static Object get(Object map, Object key, Object fallback) {
    if (map instanceof Map<?, ?> m && m.containsKey(key)) {
      return m.get(key);
    }
    return fallback;
  }

  /** Python's {@code seq[start:stop:step]} on lists and strings. */
  public static Object slice(Object seq, Object start, Object stop, Object step) {
    List<Object> list;
    boolean isString = seq instanceof CharSequence;
    if (isString) {
      list = new ArrayList<>();
      for (char c : seq.toString().toCharArray()) {
        list.add(c);
      }
    } else if (seq instanceof List<?> l) {
      list = new ArrayList<>(l);
    } else if (seq instanceof Object[] arr) {
      list = new ArrayList<>(java.util.Arrays.asList(arr));
    } else if (seq == null) {
      list = new ArrayList<>();
    } else {
      throw new IllegalArgumentException("cannot slice " + seq.getClass().getSimpleName());
    }
    int n = list.size();
    int st = step == null ? 1 : ((Number) step).intValue();
    if (st == 0) {
      throw new IllegalArgumentException("slice step cannot be zero");
    }
    int lo;
    int hi;
    if (st > 0) {
      lo = bound(start, n, 0, 0, n);
      hi = bound(stop, n, n, 0, n);
    } else {
      lo = bound(start, n, n - 1, -1, n - 1);
      hi = bound(stop, n, -1, -1, n - 1);
    }
    List<Object> out = new ArrayList<>();
    if (st > 0) {
      for (int i = lo; i < hi; i += st) {
        out.add(list.get(i));
      }
    } else {
      for (int i = lo; i > hi; i += st) {
        out.add(list.get(i));
      }
    }
    if (isString) {
      StringBuilder sb = new StringBuilder();
      out.forEach(sb::append);
      return sb.toString();
    }
    return out;
  }

  private static int bound(Object v, int n, int dflt, int min, int max) {
    if (v == null) {
      return dflt;
    }
    int i = ((Number) v).intValue();
    if (i < 0) {
      i += n;
    }
    return Math.max(min, Math.min(max, i));
  }

  /** The {@code raise_exception} function of Hugging Face templates. */
  public static Object raiseException(Object message) {
    throw new ChatTemplate.TemplateFailure(str(message));
  }

  /** The {@code strftime_now} function of Hugging Face templates (common % codes). */
  public static String strftimeNow(Object format) {
    LocalDateTime now = LocalDateTime.now();
    String f = str(format);
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < f.length(); i++) {
      char c = f.charAt(i);
      if (c != '%' || i + 1 == f.length()) {
        sb.append(c);
        continue;
      }
      char code = f.charAt(++i);
      String pattern =
          switch (code) {
            case 'd' -> "dd";
            case 'm' -> "MM";
            case 'Y' -> "yyyy";
            case 'y' -> "yy";
            case 'b' -> "MMM";
            case 'B' -> "MMMM";
            case 'H' -> "HH";
            case 'M' -> "mm";
            case 'S' -> "ss";
            case 'A' -> "EEEE";
            case 'a' -> "EEE";
            case 'p' -> "a";
            case 'I' -> "hh";
            case 'j' -> "DDD";
            default -> null;
          };
      if (pattern == null) {
        sb.append(code == '%' ? "%" : "%" + code);
      } else {
        sb.append(now.format(DateTimeFormatter.ofPattern(pattern, Locale.ENGLISH)));
      }
    }
    return sb.toString();
  }
}
