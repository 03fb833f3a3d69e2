package dev.tandem.planner.sim;

import dev.tandem.planner.Predictor;

/**
 * The simulator's bound for prediction, not a predictor a live planner can use: it reads the
 * trace's true arrival rates. Each {@link #observe} moves one interval on; {@link #predict
 * predict(k)} is the true rate {@code k} intervals after the last one observed (0 past the trace's
 * end). A planner run with it shows what perfect foresight of the rate would buy, so that a miss can
 * be put down to the predictor or to the rest.
 */
final class ForesightPredictor implements Predictor {
  static final String NAME = "foresight";

  private final double[] rates; // per interval, requests per second
  private int observed;

  ForesightPredictor(int[] arrivalsPerInterval, double intervalSeconds) {
    this.rates = new double[arrivalsPerInterval.length];
    for (int i = 0; i < rates.length; i++) {
      rates[i] = arrivalsPerInterval[i] / intervalSeconds;
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void observe(double value) {
    observed++;
  }

  @Override
  public double predict(int steps) {
    int i = observed + Math.max(1, steps) - 1;
    return i < rates.length ? rates[i] : 0;
  }
}
