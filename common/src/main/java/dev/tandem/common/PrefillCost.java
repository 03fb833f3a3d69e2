package dev.tandem.common;

/**
 * How long an engine takes to prefill: {@code perStep} seconds for each prefill step whatever its
 * tokens (launch and scheduling overhead: Dynamo's mocker, fitted on a GPU, spends 16.5 ms a step
 * before its first token), {@code perToken} seconds for every prompt token, plus {@code
 * perContextToken} seconds for every earlier token each one attends to (attention's cost grows
 * with the prompt; here a 3,500-token prompt ran 3.7× slower per token than a 256-token one).
 * Fitted by least squares over the engine's recent prefill steps. Zero means not measured yet.
 *
 * <p>{@code attention} says how far back the model's layers look: a sliding layer's tokens attend
 * to at most its window, so in a model whose layers slide (Mistral v0.1; 22 of Gemma 3 1B's 26) a
 * long prompt's attention grows only in its full layers. Earlier tokens attended to are counted as
 * the mean over the layers, the same way where the cost is fitted and where it is used.
 */
public record PrefillCost(double perToken, double perContextToken, double perStep, Attention attention) {
  public static final PrefillCost UNKNOWN = new PrefillCost(0, 0, 0);

  /**
   * How far back a model's layers attend: {@code window} positions (itself included) in the
   * {@code slidingShare} of its layers that slide, every earlier position in the rest.
   */
  public record Attention(int window, double slidingShare) {
    public static final Attention FULL = new Attention(0, 0);

    public Attention {
      if (window < 0 || !(slidingShare >= 0 && slidingShare <= 1)) {
        throw new IllegalArgumentException("attention window " + window + " over a share " + slidingShare + " of the layers");
      }
      if (window == 0) {
        slidingShare = 0;
      }
    }

    /**
     * Earlier tokens that prompt tokens {@code [computed, computed + n)} attend to, summed, as the
     * mean over the layers.
     */
    public double attended(long computed, int n) {
      double full = attendedTokens(computed, n, 0);
      return slidingShare == 0 ? full : (1 - slidingShare) * full + slidingShare * attendedTokens(computed, n, window);
    }
  }

  public PrefillCost {
    java.util.Objects.requireNonNull(attention, "attention");
  }

  /** Every layer attending in full. */
  public PrefillCost(double perToken, double perContextToken, double perStep) {
    this(perToken, perContextToken, perStep, Attention.FULL);
  }

  /** Without a per-step part. */
  public PrefillCost(double perToken, double perContextToken) {
    this(perToken, perContextToken, 0);
  }

  public PrefillCost withAttention(Attention attention) {
    return new PrefillCost(perToken, perContextToken, perStep, attention);
  }

  public boolean known() {
    return perToken > 0;
  }

  /** Seconds to prefill {@code tokens} new tokens after {@code cached} already-cached ones, in one step. */
  public double seconds(long tokens, long cached) {
    if (tokens <= 0) {
      return 0;
    }
    if (attention.slidingShare() == 0) {
      return perStep + tokens * (perToken + perContextToken * (cached + tokens / 2.0));
    }
    return perStep + tokens * perToken + perContextToken * attention.attended(cached, (int) Math.min(tokens, Integer.MAX_VALUE));
  }

  /**
   * Earlier tokens that prompt tokens {@code [computed, computed + n)} attend to, summed: position
   * p attends to p of them, or {@code window − 1} under a sliding window (0: none).
   */
  public static double attendedTokens(long computed, int n, int window) {
    long last = computed + n - 1;
    if (window <= 0 || last < window) {
      return n * (computed + (n - 1) / 2.0);
    }
    long cap = window - 1;
    if (computed >= cap) {
      return (double) n * cap;
    }
    return (computed + cap) * (cap - computed + 1) / 2.0 + (double) (last - cap) * cap; // growing, then capped
  }

  /** Prompt tokens per second for a prompt of {@code tokens} with nothing cached. */
  public double tokensPerSecond(long tokens) {
    return known() ? tokens / seconds(tokens, 0) : 0;
  }

  /**
   * The least-squares fit of {@code seconds[i] ≈ perStep + perToken × tokens[i] + perContextToken
   * × context[i]} over {@code n} steps, where context is the summed number of earlier tokens each
   * prompt token attended to. Every term must come out non-negative (and the token term positive):
   * otherwise the fit drops terms — the per-step part, then the context part — and is redone.
   */
  public static PrefillCost fit(double[] tokens, double[] context, double[] seconds, int n) {
    boolean[][] tries = {{true, true, true}, {true, true, false}, {false, true, true}, {false, true, false}};
    for (boolean[] use : tries) { // {perStep, perToken, perContextToken}
      double[] c = leastSquares(use, tokens, context, seconds, n);
      if (c != null && c[1] > 0 && c[0] >= 0 && c[2] >= 0) {
        return new PrefillCost(c[1], c[2], c[0]); // the caller knows the model's attention
      }
    }
    return UNKNOWN;
  }

  /**
   * Coefficients {perStep, perToken, perContextToken} over the used columns (the others 0), or
   * null when the columns are (nearly) dependent — steps all of one length cannot tell a per-step
   * part from a per-token one. Columns are scaled to unit length first, so that the test does not
   * depend on their units (a step's context runs to millions, its count is 1).
   */
  private static double[] leastSquares(boolean[] use, double[] tokens, double[] context, double[] seconds, int n) {
    int k = 0;
    int[] cols = new int[3];
    for (int j = 0; j < 3; j++) {
      if (use[j]) {
        cols[k++] = j;
      }
    }
    double[] norm = new double[k];
    for (int i = 0; i < n; i++) {
      double[] row = {1, tokens[i], context[i]};
      for (int r = 0; r < k; r++) {
        norm[r] += row[cols[r]] * row[cols[r]];
      }
    }
    for (int r = 0; r < k; r++) {
      if (norm[r] == 0) {
        return null;
      }
      norm[r] = Math.sqrt(norm[r]);
    }
    double[][] a = new double[k][k + 1]; // normal equations of the scaled columns, augmented
    for (int i = 0; i < n; i++) {
      double[] row = {1, tokens[i], context[i]};
      for (int r = 0; r < k; r++) {
        for (int c = 0; c < k; c++) {
          a[r][c] += row[cols[r]] / norm[r] * row[cols[c]] / norm[c];
        }
        a[r][k] += row[cols[r]] / norm[r] * seconds[i];
      }
    }
    for (int p = 0; p < k; p++) { // Gauss-Jordan with partial pivoting
      int best = p;
      for (int r = p + 1; r < k; r++) {
        if (Math.abs(a[r][p]) > Math.abs(a[best][p])) {
          best = r;
        }
      }
      double[] t = a[p];
      a[p] = a[best];
      a[best] = t;
      if (Math.abs(a[p][p]) < 1e-9) {
        return null;
      }
      for (int r = 0; r < k; r++) {
        if (r != p) {
          double f = a[r][p] / a[p][p];
          for (int c = p; c <= k; c++) {
            a[r][c] -= f * a[p][c];
          }
        }
      }
    }
    double[] out = new double[3];
    for (int r = 0; r < k; r++) {
      out[cols[r]] = a[r][k] / a[r][r] / norm[r];
    }
    return out;
  }
}
