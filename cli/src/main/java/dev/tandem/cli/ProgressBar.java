package dev.tandem.cli;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A one-line progress bar on standard error ({@code [=====>    ] 42% label}), redrawn in place on
 * a terminal and printed every tenth otherwise (logs, CI), so that long work shows it is moving.
 */
final class ProgressBar {
  private static final int WIDTH = 30;
  private final PrintStream out;
  private final String label;
  private final boolean terminal = System.console() != null;
  private int lastTenth = -1;

  ProgressBar(String label) {
    this(System.err, label);
  }

  ProgressBar(PrintStream out, String label) {
    this.out = out;
    this.label = label;
  }

  /** Shows {@code done} of {@code total}, with {@code detail} after the label. */
  void update(double done, double total, String detail) {
    double f = total <= 0 ? 1 : Math.max(0, Math.min(1, done / total));
    int tenth = (int) (f * 10);
    if (!terminal && tenth == lastTenth) {
      return;
    }
    lastTenth = tenth;
    int filled = (int) Math.round(f * WIDTH);
    String bar = "=".repeat(filled) + (filled < WIDTH ? ">" + " ".repeat(WIDTH - filled - 1) : "");
    String line = String.format(Locale.ROOT, "[%s] %3.0f%% %s %s", bar, 100 * f, label, detail == null ? "" : detail);
    if (terminal) {
      out.print("\r" + line);
    } else {
      out.println(line);
    }
    out.flush();
  }

  /** Ends the bar's line. */
  void done() {
    if (terminal) {
      out.println();
    }
  }
}
