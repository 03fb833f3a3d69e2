package dev.tandem.discovery;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Workers as etcd keys: {@code /tandem/v1/<namespace>/workers/<worker-id>} holds the worker's record
 * as JSON, attached to a lease of {@code ttl} that the worker keeps alive ({@link
 * EtcdRegistration}); a worker that dies leaves when its lease runs out. Watchers read the prefix,
 * then follow it from that revision ({@link EtcdWatch}). Through jetcd.
 *
 * <p>Thread-safe. Registrations and watches each run on their own thread of a shared scheduler.
 */
public final class EtcdDiscovery implements Discovery {
  /** The lease TTL when none is given, as {@code --discovery-ttl-s}'s default. */
  public static final Duration DEFAULT_TTL = Duration.ofSeconds(10);

  private final List<URI> endpoints;
  private final String prefix;
  private final Duration ttl;
  private final Client client;
  private final ScheduledExecutorService scheduler;
  private final List<EtcdRegistration> registrations = new CopyOnWriteArrayList<>();
  private final List<EtcdWatch> watches = new CopyOnWriteArrayList<>();

  /**
   * @param endpoints etcd's client URLs ({@code http://host:2379})
   * @param namespace the deployment's namespace within the key space (letters, digits, '-', '_', '.')
   * @param ttl the lease of each registered worker; at least 2 s (etcd's minimum)
   */
  public EtcdDiscovery(List<URI> endpoints, String namespace, Duration ttl) {
    if (endpoints.isEmpty()) {
      throw new IllegalArgumentException("--etcd-endpoints: no endpoint given");
    }
    if (!namespace.matches("[A-Za-z0-9._-]+")) {
      throw new IllegalArgumentException("--discovery-namespace: '" + namespace + "' may hold only letters, digits, '.', '_' and '-'");
    }
    if (ttl.toSeconds() < 2) {
      throw new IllegalArgumentException("--discovery-ttl-s: " + ttl.toSeconds() + " is below etcd's minimum lease of 2 s");
    }
    this.endpoints = List.copyOf(endpoints);
    this.prefix = "/tandem/v1/" + namespace + "/workers/";
    this.ttl = ttl;
    // Calls fail fast while etcd is down (no wait for ready); the registration and watch loops retry.
    this.client =
        Client.builder()
            .endpoints(endpoints.toArray(URI[]::new))
            .waitForReady(false)
            .connectTimeout(Duration.ofSeconds(2))
            .retryMaxAttempts(0)
            .build();
    this.scheduler =
        Executors.newScheduledThreadPool(4, Thread.ofPlatform().name("etcd-discovery-", 0).daemon().factory());
  }

  /** Parses {@code --etcd-endpoints}: comma-separated URLs, {@code http://} assumed where missing. */
  public static List<URI> parseEndpoints(String endpoints) {
    return java.util.Arrays.stream(endpoints.split(","))
        .map(String::strip)
        .filter(s -> !s.isEmpty())
        .map(s -> {
          URI uri = URI.create(s.contains("://") ? s : "http://" + s);
          if (uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("--etcd-endpoints: '" + s + "' is not host:port or http://host:port");
          }
          return uri;
        })
        .toList();
  }

  @Override
  public String name() {
    return "etcd";
  }

  @Override
  public String describe() {
    return "etcd at " + endpointList() + " under " + prefix;
  }

  String endpointList() {
    return String.join(",", endpoints.stream().map(URI::toString).toList());
  }

  /** The key prefix watched, ending in '/'. */
  public String prefix() {
    return prefix;
  }

  Duration ttl() {
    return ttl;
  }

  Client client() {
    return client;
  }

  ScheduledExecutorService scheduler() {
    return scheduler;
  }

  ByteSequence key(String workerId) {
    return bytes(prefix + workerId);
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  @Override
  public Registration register(WorkerRecord record) {
    EtcdRegistration r = new EtcdRegistration(this, record);
    registrations.add(r);
    r.start();
    return r;
  }

  void forget(EtcdRegistration r) {
    registrations.remove(r);
  }

  @Override
  public Watch watch(WorkerSetListener listener) {
    EtcdWatch w = new EtcdWatch(this, listener);
    watches.add(w);
    w.start();
    return w;
  }

  void forget(EtcdWatch w) {
    watches.remove(w);
  }

  @Override
  public void close() {
    registrations.forEach(EtcdRegistration::abandon);
    watches.forEach(EtcdWatch::close);
    scheduler.shutdownNow();
    client.close();
  }
}
