package dev.tandem.common;

/**
 * Upper bounds of the buckets prompt lengths are counted in (the frontend's {@code
 * tandem_frontend_uncached_prompt_tokens} histogram; the planner reads the same buckets, and its
 * simulator counts in them): 16 tokens to 131,072, two buckets per doubling, so that a bucket's
 * middle is within 21% of any length in it.
 */
public final class PromptLengthBuckets {
  private PromptLengthBuckets() {}

  private static final double[] BOUNDS = new double[27];

  static {
    for (int k = 0; k < BOUNDS.length; k++) {
      BOUNDS[k] = Math.round(16 * Math.pow(2, k / 2.0));
    }
  }

  /** The finite upper bounds, ascending (a last bucket above them is implied). */
  public static double[] bounds() {
    return BOUNDS.clone();
  }

  /** The index of the bucket {@code tokens} falls in: the first bound at or above it, or {@code bounds().length} past the last. */
  public static int bucketOf(double tokens) {
    int i = java.util.Arrays.binarySearch(BOUNDS, tokens);
    return i >= 0 ? i : -i - 1;
  }
}
