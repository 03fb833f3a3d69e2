package dev.tandem.planner;

/** The next interval looks like the last one observed. */
public final class ConstantPredictor implements Predictor {
  private double last;

  @Override
  public String name() {
    return "constant";
  }

  @Override
  public void observe(double value) {
    if (Predictor.usable(value)) {
      last = value;
    }
  }

  @Override
  public double predict(int steps) {
    return last;
  }
}
