package dev.tandem.router;

/** How a router picks workers ({@code --router-mode}). */
public enum RouterMode {
  /** By KV overlap and load ({@link KvSelector}); the router keeps the index. */
  KV("kv"),
  ROUND_ROBIN("round-robin"),
  RANDOM("random");

  private final String cliName;

  RouterMode(String cliName) {
    this.cliName = cliName;
  }

  public String cliName() {
    return cliName;
  }

  /**
   * Parses a {@code --router-mode} value (any case, {@code _} or {@code -}).
   *
   * @throws IllegalArgumentException naming the known modes
   */
  public static RouterMode parse(String name) {
    String m = Selectors.mode(name);
    for (RouterMode r : values()) {
      if (r.cliName.equals(m)) {
        return r;
      }
    }
    throw new IllegalStateException("Selectors knows mode " + m + " but RouterMode does not");
  }

  @Override
  public String toString() {
    return cliName;
  }
}
