package dev.tandem.planner.live;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses Prometheus' text exposition format (what every Tandem {@code /metrics} serves) into
 * samples; comments and malformed lines are skipped.
 */
public final class PrometheusText {
  private PrometheusText() {}

  /** One sample: metric name, labels, value. */
  public record Sample(String name, Map<String, String> labels, double value) {
    public String label(String key) {
      return labels.getOrDefault(key, "");
    }
  }

  public static List<Sample> parse(String text) {
    List<Sample> out = new ArrayList<>();
    for (String line : text.split("\n")) {
      line = line.strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      Sample s = parseLine(line);
      if (s != null) {
        out.add(s);
      }
    }
    return out;
  }

  private static Sample parseLine(String line) {
    int brace = line.indexOf('{');
    int space;
    String name;
    Map<String, String> labels = new LinkedHashMap<>();
    if (brace >= 0 && brace < line.indexOf(' ')) {
      name = line.substring(0, brace);
      int close = line.indexOf('}', brace);
      if (close < 0) {
        return null;
      }
      String body = line.substring(brace + 1, close);
      int i = 0;
      while (i < body.length()) {
        int eq = body.indexOf('=', i);
        if (eq < 0 || eq + 1 >= body.length() || body.charAt(eq + 1) != '"') {
          break;
        }
        StringBuilder v = new StringBuilder();
        int j = eq + 2;
        while (j < body.length() && body.charAt(j) != '"') {
          if (body.charAt(j) == '\\' && j + 1 < body.length()) {
            j++;
          }
          v.append(body.charAt(j++));
        }
        labels.put(body.substring(i, eq).strip(), v.toString());
        i = j + 1;
        while (i < body.length() && (body.charAt(i) == ',' || body.charAt(i) == ' ')) {
          i++;
        }
      }
      space = close + 1;
    } else {
      space = line.indexOf(' ');
      if (space < 0) {
        return null;
      }
      name = line.substring(0, space);
    }
    String[] rest = line.substring(space).strip().split("\\s+");
    if (rest.length == 0) {
      return null;
    }
    try {
      return new Sample(name, labels, switch (rest[0]) {
        case "+Inf" -> Double.POSITIVE_INFINITY;
        case "-Inf" -> Double.NEGATIVE_INFINITY;
        case "NaN" -> Double.NaN;
        default -> Double.parseDouble(rest[0]);
      });
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
