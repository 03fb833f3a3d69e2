package dev.tandem.router;

import dev.tandem.common.WorkerId;
import java.util.List;

/**
 * Picks the worker for a request among the candidates that can serve it. Implementations are the
 * routing policies (round-robin, random; the KV-aware cost selector implements the same
 * interface). Plain values in, a worker id out.
 *
 * <p>Implementations are thread-safe: frontends route from many threads at once.
 */
public interface WorkerSelector {
  /**
   * @param candidates never empty
   */
  WorkerId select(RoutingRequest request, List<WorkerLoad> candidates);

  /** The policy's name, as in {@code --router-mode}. */
  String name();
}
