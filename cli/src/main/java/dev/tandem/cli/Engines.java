package dev.tandem.cli;

/** Which engines the CLI can start today. */
final class Engines {
  private Engines() {}

  static void requireMocker(String engine) {
    switch (engine) {
      case "mocker" -> {}
      case "builtin" ->
          throw new IllegalArgumentException(
              "--engine builtin (the Java transformer engine) is not implemented yet; use --engine mocker");
      default -> throw new IllegalArgumentException("unknown engine '" + engine + "'; known: mocker");
    }
  }
}
