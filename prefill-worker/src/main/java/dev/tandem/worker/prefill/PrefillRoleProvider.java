package dev.tandem.worker.prefill;

import dev.tandem.common.WorkerRole;
import dev.tandem.worker.EngineLoop;
import dev.tandem.worker.WorkerKvTransfer;
import dev.tandem.worker.role.RoleParts;
import dev.tandem.worker.role.RoleProvider;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;

/** The prefill role: a worker that serves the {@code Prefill} call and generates nothing itself. */
public final class PrefillRoleProvider implements RoleProvider {
  @Override
  public Set<WorkerRole> roles() {
    return Set.of(WorkerRole.PREFILL);
  }

  @Override
  public RoleParts create(WorkerRole role, EngineLoop loop, WorkerKvTransfer transfer, ScheduledExecutorService timer, dev.tandem.common.InternalTls tls) {
    return new RoleParts(new PrefillCalls(loop, transfer, timer), null);
  }
}
