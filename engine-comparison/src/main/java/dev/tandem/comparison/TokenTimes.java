package dev.tandem.comparison;

import java.util.List;

/** Aggregate decode rate of concurrent streams over the window in which all of them decode. */
final class TokenTimes {
  private TokenTimes() {}

  /**
   * @param streams per stream, the arrival time (ns) of each generated token
   * @return tokens per second counted between the last stream's first token and the first
   *     stream's last token
   */
  static double steadyDecodeRate(List<long[]> streams) {
    long from = Long.MIN_VALUE;
    long to = Long.MAX_VALUE;
    for (long[] s : streams) {
      from = Math.max(from, s[0]);
      to = Math.min(to, s[s.length - 1]);
    }
    long tokens = 0;
    for (long[] s : streams) {
      for (long t : s) {
        if (t > from && t <= to) {
          tokens++;
        }
      }
    }
    return tokens / ((to - from) / 1e9);
  }
}
