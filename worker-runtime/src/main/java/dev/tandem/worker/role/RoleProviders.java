package dev.tandem.worker.role;

import dev.tandem.common.WorkerRole;
import java.util.ServiceLoader;

/** Finds the module that serves a role, the way grpc-java finds transports. */
public final class RoleProviders {
  private RoleProviders() {}

  /**
   * The provider of {@code role}.
   *
   * @throws IllegalStateException naming the artifact to add if no module on the class path serves it
   */
  public static RoleProvider forRole(WorkerRole role) {
    for (RoleProvider p : ServiceLoader.load(RoleProvider.class)) {
      if (p.roles().contains(role)) {
        return p;
      }
    }
    String artifact = role == WorkerRole.PREFILL ? "tandem-prefill-worker" : "tandem-decode-worker";
    throw new IllegalStateException(
        "no module on the class path serves the " + role.cliName() + " role with KV transfer; add " + artifact);
  }
}
