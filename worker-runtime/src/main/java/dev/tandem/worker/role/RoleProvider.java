package dev.tandem.worker.role;

import dev.tandem.common.WorkerRole;
import dev.tandem.worker.EngineLoop;
import dev.tandem.worker.WorkerKvTransfer;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;

/**
 * A worker role's module, found through {@link java.util.ServiceLoader}: {@code prefill-worker}
 * provides the prefill role, {@code decode-worker} the decode role and the transfer side of an
 * aggregated worker. The runtime asks for one only when a worker has a KV transfer agent.
 */
public interface RoleProvider {
  /** The roles this module serves. */
  Set<WorkerRole> roles();

  /**
   * The role's parts for a worker whose engine runs on {@code loop} and moves KV with {@code
   * transfer}; calls to other workers use {@code tls} (null: plaintext).
   */
  RoleParts create(WorkerRole role, EngineLoop loop, WorkerKvTransfer transfer, ScheduledExecutorService timer, dev.tandem.common.InternalTls tls);
}
