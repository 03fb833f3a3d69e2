package dev.tandem.planner;

import java.util.Arrays;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * How many requests came with how many prompt tokens to compute (after cache hits): counts at
 * representative lengths, as a histogram's buckets give them. SLA mode sizes the prefill pool from
 * it rather than from the mean, because a few long prompts make everyone behind them wait. Immutable.
 */
public final class LengthMix {
  public static final LengthMix EMPTY = new LengthMix(new double[0], new double[0]);

  private final double[] tokens; // ascending
  private final double[] counts;
  private final double total;

  private LengthMix(double[] tokens, double[] counts) {
    this.tokens = tokens;
    this.counts = counts;
    this.total = Arrays.stream(counts).sum();
  }

  /** A mix from {@code counts[i]} requests of {@code tokens[i]} tokens; unusable entries are dropped. */
  public static LengthMix of(double[] tokens, double[] counts) {
    if (tokens.length != counts.length) {
      throw new IllegalArgumentException(tokens.length + " lengths for " + counts.length + " counts");
    }
    TreeMap<Double, Double> m = new TreeMap<>();
    for (int i = 0; i < tokens.length; i++) {
      if (Predictor.usable(tokens[i]) && Predictor.usable(counts[i]) && counts[i] > 0) {
        m.merge(tokens[i], counts[i], Double::sum);
      }
    }
    return of(m);
  }

  private static LengthMix of(SortedMap<Double, Double> byTokens) {
    if (byTokens.isEmpty()) {
      return EMPTY;
    }
    double[] t = new double[byTokens.size()], c = new double[byTokens.size()];
    int i = 0;
    for (Map.Entry<Double, Double> e : byTokens.entrySet()) {
      t[i] = e.getKey();
      c[i++] = e.getValue();
    }
    return new LengthMix(t, c);
  }

  /**
   * The mix between two cumulative histograms ({@code le} bound → count, {@code +Inf} included), each
   * bucket's requests put at its middle; those above the last finite bound at 1.5× it.
   */
  public static LengthMix between(SortedMap<Double, Double> before, SortedMap<Double, Double> after) {
    TreeMap<Double, Double> m = new TreeMap<>();
    double prevLe = 0, prevCount = 0;
    for (Map.Entry<Double, Double> e : after.entrySet()) {
      double cumulative = e.getValue() - before.getOrDefault(e.getKey(), 0.0);
      double inBucket = cumulative - prevCount;
      double le = e.getKey();
      if (inBucket > 0 && Double.isFinite(inBucket)) {
        m.merge(Double.isInfinite(le) ? 1.5 * prevLe : (prevLe + le) / 2, inBucket, Double::sum);
      }
      prevCount = Math.max(prevCount, cumulative);
      if (!Double.isInfinite(le)) {
        prevLe = le;
      }
    }
    return of(m);
  }

  /** This mix and {@code other} together. */
  public LengthMix plus(LengthMix other) {
    if (other.isEmpty()) {
      return this;
    }
    if (isEmpty()) {
      return other;
    }
    TreeMap<Double, Double> m = new TreeMap<>();
    for (int i = 0; i < tokens.length; i++) {
      m.merge(tokens[i], counts[i], Double::sum);
    }
    for (int i = 0; i < other.tokens.length; i++) {
      m.merge(other.tokens[i], other.counts[i], Double::sum);
    }
    return of(m);
  }

  public boolean isEmpty() {
    return tokens.length == 0;
  }

  /** Requests in the mix. */
  public double count() {
    return total;
  }

  /** Mean tokens per request (NaN when empty). */
  public double mean() {
    double sum = 0;
    for (int i = 0; i < tokens.length; i++) {
      sum += counts[i] * tokens[i];
    }
    return total == 0 ? Double.NaN : sum / total;
  }

  /** Distinct lengths, ascending. */
  public int size() {
    return tokens.length;
  }

  public double tokens(int i) {
    return tokens[i];
  }

  /** The share of the mix's requests at {@link #tokens(int) tokens(i)}. */
  public double share(int i) {
    return counts[i] / total;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LengthMix m && Arrays.equals(tokens, m.tokens) && Arrays.equals(counts, m.counts);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(tokens) + Arrays.hashCode(counts);
  }

  @Override
  public String toString() {
    return "LengthMix[" + count() + " requests, mean " + mean() + " tokens over " + size() + " lengths]";
  }
}
