package dev.tandem.frontend.text;

import java.util.List;

/**
 * Finds stop strings in generated text as it streams, holding back a tail that could still become
 * the start of a stop string, so that no part of a stop string is ever sent (OpenAI's behaviour:
 * the stop string itself is not returned). Text added while not yet {@code armed} (vLLM's
 * {@code min_tokens} not reached) stops nothing: a stop string counts only where it ends after it.
 *
 * <p>Not thread-safe: one per generated sequence.
 */
public final class StopStrings {
  private final List<String> stops;
  private final int holdBack;
  private final StringBuilder pending = new StringBuilder();
  private int unarmed; // characters at the start of pending added before it was armed
  private boolean stopped;

  private final boolean includeStop;

  public StopStrings(List<String> stops) {
    this(stops, false);
  }

  /** With {@code includeStop} (vLLM's {@code include_stop_str_in_output}) the text ends with the stop string it matched. */
  public StopStrings(List<String> stops, boolean includeStop) {
    this.stops = List.copyOf(stops);
    this.holdBack = stops.stream().mapToInt(String::length).max().orElse(1) - 1;
    this.includeStop = includeStop;
  }

  public boolean stopped() {
    return stopped;
  }

  /** Adds text; returns what may be sent now. After a stop string, returns the text before it. */
  public String add(String text) {
    return add(text, true);
  }

  /** As {@link #add(String)}; where not {@code armed}, a stop string ending in this text stops nothing. */
  public String add(String text, boolean armed) {
    if (stopped) {
      return "";
    }
    pending.append(text);
    if (!armed) {
      unarmed = pending.length();
    }
    if (stops.isEmpty()) {
      String out = pending.toString();
      pending.setLength(0);
      unarmed = 0;
      return out;
    }
    int first = -1;
    int matched = 0;
    for (String s : stops) {
      int at = pending.indexOf(s, Math.max(0, unarmed - s.length() + 1));
      if (at >= 0 && (first < 0 || at < first)) {
        first = at;
        matched = s.length();
      }
    }
    if (first >= 0) {
      stopped = true;
      String out = pending.substring(0, first + (includeStop ? matched : 0));
      pending.setLength(0);
      return out;
    }
    int safe = pending.length() - heldBack();
    String out = pending.substring(0, safe);
    pending.delete(0, safe);
    unarmed = Math.max(0, unarmed - safe);
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
