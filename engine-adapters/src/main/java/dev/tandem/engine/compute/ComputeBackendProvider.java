package dev.tandem.engine.compute;

/**
 * Finds and creates a compute backend. Registered in {@code
 * META-INF/services/dev.tandem.engine.compute.ComputeBackendProvider}.
 */
public interface ComputeBackendProvider {
  /** The name users pass to {@code --compute}. */
  String name();

  /** Whether this backend can run here (hardware, native libraries). */
  boolean isAvailable();

  /** Why this backend cannot run here, naming what is missing (asked only when not available). */
  default String unavailableReason() {
    return "it is not available on this machine";
  }

  /** Higher wins when no backend is named. */
  int priority();

  /** Creates a backend using up to {@code threads} threads (0: all cores). */
  ComputeBackend create(int threads);
}
