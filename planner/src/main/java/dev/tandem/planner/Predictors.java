package dev.tandem.planner;

import java.util.List;

/** Makes predictors by the name {@code --predictor} takes. */
public final class Predictors {
  private Predictors() {}

  public static final List<String> NAMES = List.of("constant", "moving-average", "holt", "holt-winters", "kalman");

  /**
   * A fresh predictor; {@code seasonIntervals} is the season of {@code holt-winters} in intervals
   * (one day at the planner's interval, say).
   *
   * @throws IllegalArgumentException naming the known predictors if {@code name} is none of them
   */
  public static Predictor create(String name, int seasonIntervals) {
    return switch (name) {
      case "constant" -> new ConstantPredictor();
      case "moving-average" -> new MovingAveragePredictor(4);
      case "holt" -> HoltPredictor.defaults();
      case "holt-winters" -> new HoltWintersPredictor(0.5, 0.1, 0.2, Math.max(2, seasonIntervals));
      case "kalman" -> KalmanPredictor.defaults();
      default -> throw new IllegalArgumentException("unknown predictor '" + name + "'; choose one of " + NAMES);
    };
  }
}
