package dev.tandem.discovery;

/**
 * The worker registry: workers {@link #register} themselves, routers and the planner {@link #watch}
 * the set. Backends: {@link StaticDiscovery} (addresses on the command line, and workers of the same
 * process), {@link EtcdDiscovery} (a key per worker under a lease) and {@link KubernetesDiscovery}
 * (ready endpoints of the role Services). A backend that loses its connection keeps the last known
 * set and reconnects by itself; nothing here throws because the backend is down.
 *
 * <p>Thread-safe.
 */
public interface Discovery extends AutoCloseable {
  /** The backend's name, as {@code --discovery} takes it. */
  String name();

  /** Where the backend lives, for log lines and {@code /health} (e.g. etcd's endpoints). */
  String describe();

  /**
   * Publishes {@code record} and keeps it published until the registration is closed. Returns at
   * once; if the backend is unreachable it keeps trying in the background and logs why.
   */
  Registration register(WorkerRecord record);

  /**
   * Calls {@code listener} with every worker registered now (as {@link WorkerSetListener#added})
   * and every change from then on.
   */
  Watch watch(WorkerSetListener listener);

  /** Stops every registration (without leaving: leases run out) and watch of this instance. */
  @Override
  void close();
}
