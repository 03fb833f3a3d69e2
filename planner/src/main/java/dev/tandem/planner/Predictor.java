package dev.tandem.planner;

/**
 * Forecasts one quantity per planner interval (request rate, mean prompt length, mean output length,
 * prefix hit rate) from the values observed in earlier intervals.
 *
 * <p>Every implementation ignores inputs that are NaN, infinite or negative (a missing or broken
 * measurement is not evidence of zero load), predicts 0 before its first observation, and never
 * predicts a negative or non-finite value. Not thread-safe: one planner owns each predictor.
 */
public interface Predictor {
  /** The name {@code --predictor} takes. */
  String name();

  /** Feeds the value measured over the interval that just ended. */
  void observe(double value);

  /** The value expected {@code steps} intervals ahead (1: the next interval). */
  double predict(int steps);

  /** The value expected over the next interval. */
  default double predict() {
    return predict(1);
  }

  /** Whether {@code value} is a usable observation. */
  static boolean usable(double value) {
    return Double.isFinite(value) && value >= 0;
  }

  /** {@code value} made a valid prediction: finite and not negative. */
  static double clamp(double value) {
    return NonNegative.of(value);
  }
}
