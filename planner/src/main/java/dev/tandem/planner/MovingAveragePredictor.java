package dev.tandem.planner;

/** The mean of the last {@code window} observations. */
public final class MovingAveragePredictor implements Predictor {
  private final double[] ring;
  private int count;
  private int next;
  private double sum;

  public MovingAveragePredictor(int window) {
    if (window < 1) {
      throw new IllegalArgumentException("moving-average window must be >= 1, was " + window);
    }
    this.ring = new double[window];
  }

  @Override
  public String name() {
    return "moving-average";
  }

  @Override
  public void observe(double value) {
    if (!Predictor.usable(value)) {
      return;
    }
    if (count == ring.length) {
      sum -= ring[next];
    } else {
      count++;
    }
    ring[next] = value;
    sum += value;
    next = (next + 1) % ring.length;
  }

  @Override
  public double predict(int steps) {
    return count == 0 ? 0 : Predictor.clamp(sum / count);
  }
}
