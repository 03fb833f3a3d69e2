package dev.tandem.frontend.text;

import java.util.List;

/**
 * Finds stop strings in generated text as it streams, holding back a tail that could still become
 * the start of a stop string, so that no part of a stop string is ever sent (OpenAI's behaviour:
 * the stop string itself is not returned).
 *
 * <p>Not thread-safe: one per generated sequence.
 */
public final class StopStrings {
  private final List<String> stops;
  private final int holdBack;
  private final StringBuilder pending = new StringBuilder();
  private boolean stopped;

  public StopStrings(List<String> stops) {
    this.stops = List.copyOf(stops);
    this.holdBack = stops.stream().mapToInt(String::length).max().orElse(1) - 1;
  }

  public boolean stopped() {
    return stopped;
  }

  /** Adds text; returns what may be sent now. After a stop string, returns the text before it. */
  public String add(String text) {
    if (stopped) {
      return "";
    }
    pending.append(text);
    if (stops.isEmpty()) {
      String out = pending.toString();
      pending.setLength(0);
      return out;
    }
    int first = -1;
    for (String s : stops) {
      int at = pending.indexOf(s);
      if (at >= 0 && (first < 0 || at < first)) {
        first = at;
      }
    }
    if (first >= 0) {
      stopped = true;
      String out = pending.substring(0, first);
      pending.setLength(0);
      return out;
    }
    int safe = pending.length() - heldBack();
    String out = pending.substring(0, safe);
    pending.delete(0, safe);
    return out;
  }

  /** Length of the longest tail of the pending text that starts some stop string. */
  private int heldBack() {
    for (int k = Math.min(holdBack, pending.length()); k > 0; k--) {
      String tail = pending.substring(pending.length() - k);
      for (String s : stops) {
        if (s.startsWith(tail)) {
          return k;
        }
      }
    }
    return 0;
  }

  /** At the end of generation: whatever was held back. */
  public String flush() {
    if (stopped) {
      return "";
    }
    String out = pending.toString();
    pending.setLength(0);
    return out;
  }
}
