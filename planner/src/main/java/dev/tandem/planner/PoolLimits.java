package dev.tandem.planner;

/** The fewest and most workers a pool may have; {@code min} 0 lets the pool scale to zero. */
public record PoolLimits(int min, int max) {
  public PoolLimits {
    if (min < 0 || max < min) {
      throw new IllegalArgumentException("pool limits need 0 <= min <= max, were min " + min + ", max " + max);
    }
  }

  public int clamp(int replicas) {
    return Math.max(min, Math.min(max, replicas));
  }
}
