package dev.tandem.router;

/** A generation in flight on a worker. */
public interface Generation {
  /** Aborts it on every worker that holds part of it; its reservation is released. Idempotent. */
  void cancel(String reason);
}
