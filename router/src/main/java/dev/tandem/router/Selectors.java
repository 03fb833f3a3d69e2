package dev.tandem.router;

import java.util.Locale;

/** Builds a selector from its policy name. */
public final class Selectors {
  private Selectors() {}

  /**
   * @throws IllegalArgumentException for an unknown name, listing the known ones
   */
  public static WorkerSelector byName(String name) {
    return switch (name.toLowerCase(Locale.ROOT)) {
      case "round-robin", "round_robin", "roundrobin" -> new RoundRobinSelector();
      case "random" -> new RandomSelector();
      case "kv" ->
          throw new IllegalArgumentException(
              "router mode 'kv' (KV-aware routing) is not implemented yet; use round-robin or random");
      default ->
          throw new IllegalArgumentException(
              "unknown router mode '" + name + "'; known: round-robin, random");
    };
  }
}
