package dev.tandem.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every predictor against the contract in {@link Predictor}. */
class PredictorTest {
  static Iterable<String> names() {
    return Predictors.NAMES;
  }

  private static Predictor create(String name) {
    return Predictors.create(name, 8);
  }

  @ParameterizedTest
  @MethodSource("names")
  void predictsZeroBeforeAnyObservation(String name) {
    assertEquals(0, create(name).predict(), 0);
    assertEquals(0, create(name).predict(5), 0);
  }

  @ParameterizedTest
  @MethodSource("names")
  void aConstantSeriesPredictsItsValue(String name) {
    Predictor p = create(name);
    for (int i = 0; i < 40; i++) {
      p.observe(7.5);
    }
    assertEquals(7.5, p.predict(), 1e-6, name);
    assertEquals(7.5, p.predict(3), 1e-6, name);
  }

  @ParameterizedTest
  @MethodSource("names")
  void nanInfiniteAndNegativeInputsAreIgnored(String name) {
    Predictor p = create(name);
    for (int i = 0; i < 20; i++) {
      p.observe(4);
      p.observe(Double.NaN);
      p.observe(-3);
      p.observe(Double.POSITIVE_INFINITY);
      p.observe(Double.NEGATIVE_INFINITY);
    }
    assertEquals(4, p.predict(), 1e-6, name);
  }

  @ParameterizedTest
  @MethodSource("names")
  void neverNegativeNorNonFinite(String name) {
    Random r = new Random(42);
    Predictor p = create(name);
    for (int i = 0; i < 500; i++) {
      // a falling series drives trend models below zero unless they clamp
      double v = i < 250 ? 1000 - 4 * i + r.nextGaussian() * 50 : (r.nextBoolean() ? 0 : r.nextDouble() * 1e6);
      p.observe(v);
      double f = p.predict(1 + r.nextInt(10));
      assertTrue(Double.isFinite(f) && f >= 0, name + " predicted " + f + " after " + i);
    }
  }

  @ParameterizedTest
  @MethodSource("names")
  void followsAStepWithinTwelveIntervals(String name) {
    Predictor p = create(name);
    for (int i = 0; i < 16; i++) { // two seasons of 8 for holt-winters
      p.observe(10);
    }
    for (int i = 0; i < 12; i++) {
      p.observe(50);
    }
    assertEquals(50, p.predict(), 50 * 0.1, name + " predicted " + p.predict());
  }

  @ParameterizedTest
  @MethodSource("names")
  void trendModelsLeadARamp(String name) {
    Predictor p = create(name);
    for (int i = 1; i <= 30; i++) {
      p.observe(10 * i);
    }
    double ahead = p.predict(3);
    if (name.equals("holt") || name.equals("kalman") || name.equals("holt-winters")) {
      assertTrue(ahead > 300, name + " should extrapolate the ramp, predicted " + ahead);
    } else {
      assertTrue(ahead <= 300, name + " has no trend, predicted " + ahead);
    }
  }

  /** After traffic stops, a trend model must settle at zero, not swing back to a phantom rise. */
  @ParameterizedTest
  @MethodSource("names")
  void aDropToZeroStaysAtZero(String name) {
    Predictor p = create(name);
    for (int i = 0; i < 30; i++) {
      p.observe(100);
    }
    for (int i = 0; i < 4; i++) {
      p.observe(0);
    }
    for (int i = 0; i < 40; i++) {
      p.observe(0);
      if (!name.equals("holt-winters")) { // its season remembers the traffic a season ago
        assertTrue(p.predict(4) < 0.5, name + " forecast " + p.predict(4) + " after " + i + " zero intervals");
      }
    }
  }

  @org.junit.jupiter.api.Test
  void holtWintersLearnsASeason() {
    Predictor p = Predictors.create("holt-winters", 4);
    double[] season = {10, 40, 10, 0};
    for (int k = 0; k < 10; k++) {
      for (double v : season) {
        p.observe(v);
      }
    }
    // After whole seasons, the next interval is the season's first position.
    assertEquals(10, p.predict(1), 2);
    assertEquals(40, p.predict(2), 4);
    Predictor flat = Predictors.create("moving-average", 4);
    for (int k = 0; k < 10; k++) {
      for (double v : season) {
        flat.observe(v);
      }
    }
    assertEquals(15, flat.predict(2), 1e-9); // the mean, blind to the season
  }

  @org.junit.jupiter.api.Test
  void unknownNameListsTheKnownOnes() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class, () -> Predictors.create("arima", 8));
    assertTrue(e.getMessage().contains("kalman"), e.getMessage());
  }
}
