package dev.tandem.planner;

/**
 * Holt's linear trend (double exponential smoothing): {@code level ← α·x + (1−α)(level + trend)},
 * {@code trend ← β(level − level_prev) + (1−β)·trend}; the forecast {@code h} intervals ahead is
 * {@code level + h·trend}. It leads a ramp by the trend, which matters when new workers take longer
 * to start than one interval.
 */
public final class HoltPredictor implements Predictor {
  private final double alpha;
  private final double beta;
  private double level;
  private double trend;
  private int count;

  public HoltPredictor(double alpha, double beta) {
    if (!(alpha > 0 && alpha <= 1 && beta >= 0 && beta <= 1)) {
      throw new IllegalArgumentException("holt needs 0 < alpha <= 1 and 0 <= beta <= 1, was " + alpha + ", " + beta);
    }
    this.alpha = alpha;
    this.beta = beta;
  }

  /** α 0.5, β 0.3: follows a step within a few intervals. */
  public static HoltPredictor defaults() {
    return new HoltPredictor(0.5, 0.3);
  }

  @Override
  public String name() {
    return "holt";
  }

  @Override
  public void observe(double value) {
    if (!Predictor.usable(value)) {
      return;
    }
    if (count++ == 0) {
      level = value;
      trend = 0;
      return;
    }
    double previous = level;
    // The quantities forecast are never negative; a level below zero would only swing back up
    // as a phantom positive trend after a drop to zero.
    level = Math.max(0, alpha * value + (1 - alpha) * (level + trend));
    trend = beta * (level - previous) + (1 - beta) * trend;
  }

  @Override
  public double predict(int steps) {
    return count == 0 ? 0 : Predictor.clamp(level + Math.max(1, steps) * trend);
  }
}
