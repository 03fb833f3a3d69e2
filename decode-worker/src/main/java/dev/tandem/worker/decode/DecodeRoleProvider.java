package dev.tandem.worker.decode;

import dev.tandem.common.InternalTls;
import dev.tandem.common.WorkerRole;
import dev.tandem.worker.EngineLoop;
import dev.tandem.worker.WorkerKvTransfer;
import dev.tandem.worker.role.RoleParts;
import dev.tandem.worker.role.RoleProvider;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The decode role, and the transfer side of an aggregated worker: remote prefill with a KV pull,
 * local prefill as the fallback, link probes.
 */
public final class DecodeRoleProvider implements RoleProvider {
  @Override
  public Set<WorkerRole> roles() {
    return Set.of(WorkerRole.DECODE, WorkerRole.AGGREGATED);
  }

  @Override
  public RoleParts create(WorkerRole role, EngineLoop loop, WorkerKvTransfer transfer, ScheduledExecutorService timer, InternalTls tls) {
    return new RoleParts(null, new RemotePrefills(loop, transfer, timer, loop.engine().info().eosTokenIds(), tls));
  }
}
