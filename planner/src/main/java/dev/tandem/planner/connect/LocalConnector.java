package dev.tandem.planner.connect;

import dev.tandem.planner.Pool;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts and stops worker processes on this machine: each new worker runs {@code launcher worker
 * --role R --worker-id ID --port P --metrics-port M} plus the pool's arguments (its discovery
 * backend, engine and model), optionally under {@code taskset} on its own CPU range, logging to
 * {@code logDir/ID.log}. Removing a worker drains it ({@code POST /drain} on its metrics port:
 * readiness off, no new requests, those in flight finish, then it exits 0) — the least-loaded first,
 * never a worker still serving its last request. A worker that exits before it ever served fails
 * a scale with its log's tail: the scale that started it when it dies within two seconds, else the
 * pool's next scale (whenever it died), so that the planner backs off instead of restarting it.
 *
 * <p>Thread-safe (one planner loop calls it; {@link #close} may come from a shutdown hook).
 */
public final class LocalConnector implements Connector {
  private static final Logger log = LoggerFactory.getLogger(LocalConnector.class);

  /**
   * How to launch workers: the launcher command, each pool's worker role ({@code prefill}; {@code
   * decode}, or {@code agg} for aggregated workers that prefill their own prompts) and arguments,
   * where logs go, CPUs per worker (0: no pinning) and the address workers listen on.
   */
  public record Spec(List<String> launcher, Map<Pool, String> roles, Map<Pool, List<String>> poolArgs, Path logDir,
      int cpusPerWorker, String host) {}

  private final class Child {
    final String id;
    final Pool pool;
    final Process process;
    final int metricsPort;
    final int cpuSlot;
    final Path logFile;
    volatile boolean draining;
    /** Whether it ever answered /health: one that dies before it did failed to start. */
    volatile boolean served;

    Child(String id, Pool pool, Process process, int metricsPort, int cpuSlot, Path logFile) {
      this.id = id;
      this.pool = pool;
      this.process = process;
      this.metricsPort = metricsPort;
      this.cpuSlot = cpuSlot;
      this.logFile = logFile;
    }

    boolean serving() {
      try {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(URI.create("http://" + spec.host() + ":" + metricsPort + "/health"))
            .timeout(Duration.ofSeconds(1)).GET().build(), HttpResponse.BodyHandlers.discarding());
        served |= r.statusCode() == 200;
        return r.statusCode() == 200;
      } catch (IOException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

  private final Spec spec;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
  private final Map<Pool, List<Child>> children = new EnumMap<>(Pool.class);
  /** Start failures seen since the last scale of each pool: workers that exited before they served. */
  private final Map<Pool, List<String>> failedStarts = new EnumMap<>(Pool.class);
  private int next;

  public LocalConnector(Spec spec) throws IOException {
    this.spec = spec;
    Files.createDirectories(spec.logDir());
    for (Pool p : Pool.values()) {
      children.put(p, new ArrayList<>());
      failedStarts.put(p, new ArrayList<>());
    }
  }

  @Override
  public String name() {
    return "local";
  }

  /** Workers alive and not draining; those that died before they ever served are kept as start failures. */
  private synchronized List<Child> live(Pool pool) {
    children.get(pool).removeIf(c -> {
      if (c.process.isAlive()) {
        return false;
      }
      if (!c.draining && !c.served) {
        failedStarts.get(pool).add(startFailure(c.pool, c.id, c.process, c.logFile));
      }
      return true;
    });
    return children.get(pool).stream().filter(c -> !c.draining).toList();
  }

  private static String startFailure(Pool pool, String id, Process p, Path logFile) {
    return pool.cliName() + " worker " + id + " exited with " + p.exitValue() + " before it was seen serving; " + logFile + " ends: " + tail(logFile);
  }

  /** Ids of the live workers this connector started in {@code pool}. */
  public List<String> workers(Pool pool) {
    return live(pool).stream().map(c -> c.id).toList();
  }

  @Override
  public int starting(Pool pool) {
    int n = 0;
    for (Child c : live(pool)) {
      if (!c.serving()) {
        n++;
      }
    }
    return n;
  }

  @Override
  public void scale(Pool pool, int replicas, Collection<String> leastLoaded) throws ConnectorException {
    List<Child> live = live(pool);
    List<String> failed;
    synchronized (this) {
      failed = List.copyOf(failedStarts.get(pool));
      failedStarts.get(pool).clear();
    }
    if (!failed.isEmpty()) {
      // Report it rather than start the same failure again at once: the planner backs off and retries.
      throw new ConnectorException(String.join("; ", failed));
    }
    for (int i = live.size(); i < replicas; i++) {
      start(pool);
    }
    int excess = live.size() - replicas;
    if (excess <= 0) {
      return;
    }
    // Victims: those still starting (they serve nobody), then the least loaded as the routers see them.
    LinkedHashSet<Child> victims = new LinkedHashSet<>();
    for (Child c : live) {
      if (!c.serving()) {
        victims.add(c);
      }
    }
    for (String id : leastLoaded) {
      live.stream().filter(c -> c.id.equals(id)).findFirst().ifPresent(victims::add);
    }
    victims.addAll(live);
    int n = 0;
    for (Child c : victims) {
      if (n++ >= excess) {
        break;
      }
      drain(c);
    }
  }

  private void drain(Child c) throws ConnectorException {
    c.draining = true;
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + spec.host() + ":" + c.metricsPort + "/drain"))
          .timeout(Duration.ofSeconds(5)).POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
      log.info("draining {} worker {} (pid {}): {}", c.pool.cliName(), c.id, c.process.pid(), r.statusCode());
      if (r.statusCode() != 202) {
        c.process.destroy(); // e.g. 403 from a worker under mutual TLS: SIGTERM drains it the same way
      }
    } catch (IOException e) {
      // Not listening yet (still starting) or already gone: SIGTERM drains as well.
      log.info("draining {} worker {} (pid {}) by SIGTERM: {}", c.pool.cliName(), c.id, c.process.pid(), e.getMessage());
      c.process.destroy();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ConnectorException("interrupted draining " + c.id);
    }
  }

  private void start(Pool pool) throws ConnectorException {
    String id;
    int slot;
    synchronized (this) {
      id = "local-" + pool.cliName() + "-" + next;
      slot = next++;
    }
    List<String> cmd = new ArrayList<>();
    if (spec.cpusPerWorker() > 0) {
      int cpus = Runtime.getRuntime().availableProcessors();
      int first = (slot * spec.cpusPerWorker()) % Math.max(1, cpus);
      int last = Math.min(cpus - 1, first + spec.cpusPerWorker() - 1);
      cmd.addAll(List.of("taskset", "-c", first + "-" + last));
    }
    cmd.addAll(spec.launcher());
    int port = freePort();
    int metricsPort = freePort();
    cmd.addAll(List.of("worker", "--role", spec.roles().get(pool), "--worker-id", id,
        "--host", spec.host(), "--port", Integer.toString(port), "--metrics-port", Integer.toString(metricsPort)));
    cmd.addAll(spec.poolArgs().getOrDefault(pool, List.of()));
    Path logFile = spec.logDir().resolve(id + ".log");
    Process p;
    try {
      p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(logFile.toFile()).start();
    } catch (IOException e) {
      throw new ConnectorException("cannot start " + pool.cliName() + " worker " + id + " (" + String.join(" ", cmd) + "): " + e.getMessage(), e);
    }
    try {
      if (p.waitFor(2, TimeUnit.SECONDS)) {
        throw new ConnectorException(startFailure(pool, id, p, logFile));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroy();
      throw new ConnectorException("interrupted starting " + id);
    }
    synchronized (this) {
      children.get(pool).add(new Child(id, pool, p, metricsPort, slot, logFile));
    }
    log.info("started {} worker {} (pid {}, gRPC {}:{}, metrics {}), log {}", pool.cliName(), id, p.pid(), spec.host(), port, metricsPort, logFile);
  }

  private static String tail(Path file) {
    try {
      List<String> lines = Files.readAllLines(file);
      return String.join(" | ", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
    } catch (IOException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }

  private static int freePort() throws ConnectorException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new ConnectorException("no free port: " + e.getMessage(), e);
    }
  }

  /** Drains every worker it started (SIGTERM) and waits up to {@code timeout} for them to exit. */
  public void stopAll(Duration timeout) {
    List<Child> all = new ArrayList<>();
    synchronized (this) {
      children.values().forEach(all::addAll);
    }
    all.forEach(c -> c.process.destroy());
    long deadline = System.nanoTime() + timeout.toNanos();
    for (Child c : all) {
      try {
        if (!c.process.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
          c.process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  @Override
  public void close() {
    stopAll(Duration.ofSeconds(60));
  }
}
