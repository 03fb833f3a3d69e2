package dev.tandem.engine.mocker;

/**
 * How long a mocker step takes. The default polynomials are Dynamo's mocker's, fitted on a GPU:
 * prefill_ms = 4.209989e-7·t² + 0.01518344·t + 16.50142 for t new prompt tokens in the step, and
 * decode_ms = −25.74·u² + 54.01·u + 5.74 with u the used fraction of KV blocks. Both are divided by
 * {@code speedupRatio}; a ratio of 0 (or infinity) means no delay at all.
 */
public record TimingModel(double speedupRatio) {
  public TimingModel {
    if (speedupRatio < 0 || Double.isNaN(speedupRatio)) {
      throw new IllegalArgumentException("speedup ratio must be >= 0, was " + speedupRatio);
    }
  }

  public static TimingModel realTime() {
    return new TimingModel(1.0);
  }

  public static TimingModel noDelay() {
    return new TimingModel(0.0);
  }

  public boolean delays() {
    return speedupRatio > 0 && !Double.isInfinite(speedupRatio);
  }

  /** Milliseconds to prefill {@code tokens} new tokens, before the speedup. */
  public static double prefillMs(long tokens) {
    return 4.209989e-7 * tokens * tokens + 0.01518344 * tokens + 16.50142;
  }

  /** Milliseconds of one decode step at KV usage {@code usedFraction}, before the speedup. */
  public static double decodeMs(double usedFraction) {
    return -25.74 * usedFraction * usedFraction + 54.01 * usedFraction + 5.74;
  }

  /** Nanoseconds one step takes with the speedup applied; 0 without delay. */
  public long stepNanos(long prefillTokens, int decodingSequences, double usedFraction) {
    if (!delays()) {
      return 0;
    }
    double ms = 0;
    if (prefillTokens > 0) {
      ms += prefillMs(prefillTokens);
    }
    if (decodingSequences > 0) {
      ms += decodeMs(usedFraction);
    }
    return (long) (ms * 1_000_000 / speedupRatio);
  }
}
