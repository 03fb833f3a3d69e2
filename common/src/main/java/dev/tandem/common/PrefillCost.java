package dev.tandem.common;

/**
 * How long an engine takes to prefill: {@code perToken} seconds for every prompt token, plus
 * {@code perContextToken} seconds for every earlier token each one attends to (attention's cost
 * grows with the prompt; here a 3,500-token prompt ran 3.7× slower per token than a 256-token one).
 * Fitted by least squares over the engine's recent prefill steps. Zero means not measured yet.
 */
public record PrefillCost(double perToken, double perContextToken) {
  public static final PrefillCost UNKNOWN = new PrefillCost(0, 0);

  public boolean known() {
    return perToken > 0;
  }

  /** Seconds to prefill {@code tokens} new tokens after {@code cached} already-cached ones. */
  public double seconds(long tokens, long cached) {
    return tokens * (perToken + perContextToken * (cached + tokens / 2.0));
  }

  /** Prompt tokens per second for a prompt of {@code tokens} with nothing cached. */
  public double tokensPerSecond(long tokens) {
    return known() ? tokens / seconds(tokens, 0) : 0;
  }

  /**
   * The least-squares fit of {@code seconds[i] ≈ perToken × tokens[i] + perContextToken ×
   * context[i]} over {@code n} samples, where context is the summed number of earlier tokens each
   * prompt token attended to; a negative context term is dropped and the token term refitted.
   */
  public static PrefillCost fit(double[] tokens, double[] context, double[] seconds, int n) {
    double tt = 0, tc = 0, cc = 0, st = 0, sc = 0;
    for (int i = 0; i < n; i++) {
      tt += tokens[i] * tokens[i];
      tc += tokens[i] * context[i];
      cc += context[i] * context[i];
      st += seconds[i] * tokens[i];
      sc += seconds[i] * context[i];
    }
    if (tt == 0) {
      return UNKNOWN;
    }
    double det = tt * cc - tc * tc;
    if (det > 1e-9 * tt * cc) {
      double a = (st * cc - sc * tc) / det;
      double b = (tt * sc - tc * st) / det;
      if (a > 0 && b >= 0) {
        return new PrefillCost(a, b);
      }
    }
    return new PrefillCost(st / tt, 0);
  }
}
