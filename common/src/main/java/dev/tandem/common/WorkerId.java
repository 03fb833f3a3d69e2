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
}
