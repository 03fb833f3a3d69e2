package dev.tandem.frontend.parse;

/**
 * Splits one choice's streamed output into reasoning and content. Text arrives in pieces; a piece
 * that may be the start of a tag ({@code <thi}) is held back until the next one decides it.
 *
 * <p>Threading: one choice's thread (the connection's event loop).
 */
public final class ReasoningSplitter {
  static final String OPEN = "<think>";
  static final String CLOSE = "</think>";

  /** A piece of output, divided. */
  public record Split(String reasoning, String content) {
    static final Split EMPTY = new Split("", "");
  }

  private enum State { UNDECIDED, REASONING, CONTENT }

  private State state;
  private final StringBuilder pending = new StringBuilder();
  private boolean trimNewlines;

  /** DeepSeek-R1: output is reasoning from the start (an explicit {@code <think>} is dropped). */
  private final boolean reasoningFirst;

  public ReasoningSplitter(ReasoningFormat format) {
    this.state = format == ReasoningFormat.NONE ? State.CONTENT : State.UNDECIDED;
    this.reasoningFirst = format == ReasoningFormat.DEEPSEEK_R1;
  }

  /** The next piece of output. */
  public Split add(String text) {
    pending.append(text);
    StringBuilder reasoning = new StringBuilder();
    StringBuilder content = new StringBuilder();
    boolean progress = true;
    while (progress && !pending.isEmpty()) {
      progress = false;
      switch (state) {
        case UNDECIDED -> {
          String lead = pending.toString().stripLeading();
          if (lead.startsWith(OPEN)) {
            pending.delete(0, pending.indexOf(OPEN) + OPEN.length());
            state = State.REASONING;
            trimNewlines = true;
            progress = true;
          } else if (!OPEN.startsWith(lead) || lead.length() >= OPEN.length()) {
            state = reasoningFirst ? State.REASONING : State.CONTENT;
            progress = true;
          }
        }
        case REASONING -> {
          trim();
          int close = pending.indexOf(CLOSE);
          if (close >= 0) {
            reasoning.append(pending, 0, close);
            pending.delete(0, close + CLOSE.length());
            state = State.CONTENT;
            trimNewlines = true;
            progress = true;
          } else {
            int keep = partialTag(pending, CLOSE);
            reasoning.append(pending, 0, pending.length() - keep);
            pending.delete(0, pending.length() - keep);
          }
        }
        case CONTENT -> {
          trim();
          content.append(pending);
          pending.setLength(0);
        }
      }
    }
    return reasoning.isEmpty() && content.isEmpty() ? Split.EMPTY : new Split(reasoning.toString(), content.toString());
  }

  /** The end of the output: whatever was held back. */
  public Split finish() {
    String rest = pending.toString();
    pending.setLength(0);
    if (state == State.REASONING) {
      return new Split(rest, "");
    }
    return new Split("", state == State.CONTENT && trimNewlines ? rest.stripLeading() : rest);
  }

  private void trim() {
    if (trimNewlines) {
      int i = 0;
      while (i < pending.length() && pending.charAt(i) == '\n') {
        i++;
      }
      pending.delete(0, i);
      if (!pending.isEmpty()) {
        trimNewlines = false;
      }
    }
  }

  /** Length of the longest suffix of {@code s} that is a proper prefix of {@code tag}. */
  static int partialTag(CharSequence s, String tag) {
    for (int k = Math.min(tag.length() - 1, s.length()); k > 0; k--) {
      boolean match = true;
      for (int i = 0; i < k; i++) {
        if (s.charAt(s.length() - k + i) != tag.charAt(i)) {
          match = false;
          break;
        }
      }
      if (match) {
        return k;
      }
    }
    return 0;
  }
}
