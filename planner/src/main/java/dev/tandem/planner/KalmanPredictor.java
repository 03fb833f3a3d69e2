package dev.tandem.planner;

/**
 * A Kalman filter over a local linear trend: state {@code (level, slope)}, {@code level_t =
 * level_{t−1} + slope_{t−1} + w₁}, {@code slope_t = slope_{t−1} + w₂}, observed {@code x_t =
 * level_t + v}. The process noises (variance {@code qLevel}, {@code qSlope}) and the observation
 * noise {@code r} are relative to each other; only their ratios set how fast it follows. The filter
 * scales them by the observed variance so that one setting fits request rates and token counts alike.
 */
public final class KalmanPredictor implements Predictor {
  private final double qLevel;
  private final double qSlope;
  private final double r;
  private double level;
  private double slope;
  private double p00, p01, p11; // the state covariance (symmetric)
  private int count;
  private double scale; // running mean of x², sets the noises' unit

  public KalmanPredictor(double qLevel, double qSlope, double r) {
    if (!(qLevel >= 0 && qSlope >= 0 && r > 0)) {
      throw new IllegalArgumentException("kalman needs qLevel, qSlope >= 0 and r > 0");
    }
    this.qLevel = qLevel;
    this.qSlope = qSlope;
    this.r = r;
  }

  /** Level noise 0.5, slope noise 0.05, observation noise 1: follows a step within a few intervals. */
  public static KalmanPredictor defaults() {
    return new KalmanPredictor(0.5, 0.05, 1.0);
  }

  @Override
  public String name() {
    return "kalman";
  }

  @Override
  public void observe(double x) {
    if (!Predictor.usable(x)) {
      return;
    }
    count++;
    scale += (x * x - scale) / Math.min(count, 20);
    double unit = Math.max(scale, 1e-12);
    if (count == 1) {
      level = x;
      slope = 0;
      p00 = unit;
      p01 = 0;
      p11 = unit;
      return;
    }
    // Predict: x' = F x, P' = F P Fᵀ + Q with F = [[1, 1], [0, 1]].
    double l = level + slope;
    double a00 = p00 + 2 * p01 + p11 + qLevel * unit;
    double a01 = p01 + p11;
    double a11 = p11 + qSlope * unit;
    // Update with H = [1, 0].
    double s = a00 + r * unit;
    double k0 = a00 / s;
    double k1 = a01 / s;
    double innovation = x - l;
    level = l + k0 * innovation;
    slope = slope + k1 * innovation;
    if (level < 0) { // never negative: a level below zero would swing back as a phantom rise
      level = 0;
      slope = Math.max(0, slope);
    }
    p00 = (1 - k0) * a00;
    p01 = (1 - k0) * a01;
    p11 = a11 - k1 * a01;
  }

  @Override
  public double predict(int steps) {
    return count == 0 ? 0 : Predictor.clamp(level + Math.max(1, steps) * slope);
  }
}
