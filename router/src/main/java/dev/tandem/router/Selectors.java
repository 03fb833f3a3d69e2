package dev.tandem.router;

import java.util.Locale;

/** Builds the load-only selectors from their policy name; {@code kv} is built by the router, which owns the index. */
public final class Selectors {
  public static final String KV = "kv";

  private Selectors() {}

  /** Normalises and checks a {@code --router-mode} value. */
  public static String mode(String name) {
    String m = name.toLowerCase(Locale.ROOT).replace('_', '-');
    return switch (m) {
      case "kv", "round-robin", "random" -> m;
      case "roundrobin" -> "round-robin";
      default -> throw new IllegalArgumentException("unknown router mode '" + name + "'; known: kv, round-robin, random");
    };
  }

  /**
   * @throws IllegalArgumentException for {@code kv} (needs an index) or an unknown name
   */
  public static WorkerSelector byName(String name) {
    return switch (mode(name)) {
      case "round-robin" -> new RoundRobinSelector();
      case "random" -> new RandomSelector();
      default -> throw new IllegalArgumentException("router mode '" + name + "' needs the router's KV index; build it with Router.create");
    };
  }
}
