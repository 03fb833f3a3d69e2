package dev.tandem.common;

import java.util.Arrays;
import java.util.stream.Collectors;

/** What a worker does: prefill and decode its own requests, only prefill, or only decode. */
public enum WorkerRole {
  /** Prefills and decodes its own requests (and may pull KV from a prefill worker). */
  AGGREGATED("agg"),
  /** Computes prompts' KV for decode workers; generates nothing itself. */
  PREFILL("prefill"),
  /** Pulls prompts' KV from prefill workers and generates (prefills locally when it must). */
  DECODE("decode");

  private final String cliName;

  WorkerRole(String cliName) {
    this.cliName = cliName;
  }

  /** The name {@code --role} takes. */
  public String cliName() {
    return cliName;
  }

  /** True for roles that need a KV transfer agent. */
  public boolean splits() {
    return this != AGGREGATED;
  }

  /**
   * Parses {@code --role}.
   *
   * @throws IllegalArgumentException naming the valid roles
   */
  public static WorkerRole parse(String name) {
    for (WorkerRole r : values()) {
      if (r.cliName.equals(name)) {
        return r;
      }
    }
    throw new IllegalArgumentException(
        "unknown worker role '" + name + "'; expected one of "
            + Arrays.stream(values()).map(WorkerRole::cliName).collect(Collectors.joining(", ")));
  }

  @Override
  public String toString() {
    return cliName;
  }
}
