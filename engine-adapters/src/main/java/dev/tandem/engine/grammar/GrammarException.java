package dev.tandem.engine.grammar;

/**
 * A schema this compiler cannot turn into a grammar: unsupported keyword, invalid value, a limit
 * exceeded. {@link #path()} is where in the schema, as a JSON pointer ({@code /properties/age/minimum}).
 */
public final class GrammarException extends RuntimeException {
  private final String path;

  public GrammarException(String path, String message) {
    super(message + (path.isEmpty() ? "" : " (at " + path + ")"));
    this.path = path;
  }

  public String path() {
    return path;
  }
}
