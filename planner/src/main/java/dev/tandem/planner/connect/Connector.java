package dev.tandem.planner.connect;

import dev.tandem.planner.Pool;
import java.util.Collection;

/**
 * Where the planner's decisions take effect: {@code local} processes, a {@code kubernetes}
 * Deployment per pool, or {@code virtual} (decisions written for another tool). Implementations
 * drain a worker before it goes — never dropping a request — and report failures by throwing,
 * so that the planner's loop retries with backoff.
 */
public interface Connector extends AutoCloseable {
  /** {@code local}, {@code kubernetes} or {@code virtual}. */
  String name();

  /** Workers of {@code pool} asked for and not yet serving. */
  int starting(Pool pool);

  /**
   * Brings {@code pool} to {@code replicas} workers; to remove workers it drains the ones {@code
   * leastLoaded} lists first (ids as the routers know them, least loaded first).
   *
   * @throws ConnectorException when the change could not be made (it is retried)
   */
  void scale(Pool pool, int replicas, Collection<String> leastLoaded) throws ConnectorException;

  @Override
  default void close() {}
}
