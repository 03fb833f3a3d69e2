package dev.tandem.common;

import java.util.Objects;

/** A worker's identity, stable for the worker process's life. */
public record WorkerId(String value) {
  public WorkerId {
    Objects.requireNonNull(value, "value");
    if (value.isBlank()) {
      throw new IllegalArgumentException("worker id must not be blank");
    }
  }

  @Override
  public String toString() {
    return value;
  }

  // Written out rather than the record's generated ones: those go through a method-handle chain
  // (ObjectMethods) that a router's hot maps keyed by worker pay on every lookup.
  @Override
  public boolean equals(Object o) {
    return o == this || o instanceof WorkerId other && value.equals(other.value);
  }

  @Override
  public int hashCode() {
    return value.hashCode();
  }
}
