package dev.tandem.router;

import java.util.List;

/**
 * Picks the worker for a request among the candidates that can serve it. Implementations are the
 * routing policies (round-robin, random, KV-aware cost). Plain values in, a selection out.
 *
 * <p>Implementations are thread-safe: frontends route from many threads at once.
 */
public interface WorkerSelector {
  /**
   * @param candidates never empty
   */
  Selection select(RoutingRequest request, List<WorkerLoad> candidates);

  /** The policy's name, as in {@code --router-mode}. */
  String name();
}
