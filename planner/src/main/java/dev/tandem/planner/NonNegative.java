package dev.tandem.planner;

/** A measurement or forecast made usable: finite and not negative, else 0. */
final class NonNegative {
  private NonNegative() {}

  static double of(double value) {
    return Double.isFinite(value) ? Math.max(0, value) : 0;
  }
}
