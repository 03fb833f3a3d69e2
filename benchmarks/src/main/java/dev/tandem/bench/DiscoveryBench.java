package dev.tandem.bench;

import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.WorkerRole;
import dev.tandem.discovery.EtcdDiscovery;
import dev.tandem.discovery.Registration;
import dev.tandem.discovery.WorkerRecord;
import dev.tandem.router.Route;
import dev.tandem.router.TokenListener;
import dev.tandem.router.grpc.DiscoveredWorkers;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerPool;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Discovery as a router lives it, against a real etcd (docs/benchmarks.md, "Discovery"):
 *
 * <ul>
 *   <li>{@code churn}: TRIALS times, a worker process starts and registers; the time from its
 *       launch to its registration being seen, to its admission (Described), and to the first
 *       request routed to it and answered; then {@code kill -9}: the time until the router stops
 *       choosing it (its load stream breaks) and until etcd's lease expiry removes it.
 *   <li>{@code scale}: the router's decision (route + release) over two real workers, alone, then
 *       with 1,000 more records registered in etcd (at closed ports: registered but not answering,
 *       which the router keeps retrying) and 100 of them re-registered every second, to show the
 *       watch off the request path.
 * </ul>
 *
 * <pre>DiscoveryBench ETCD_URL churn TRIALS TTL_S | scale</pre>
 */
public final class DiscoveryBench {
  private DiscoveryBench() {}

  public static void main(String[] args) throws Exception {
    URI etcd = URI.create(args[0]);
    switch (args[1]) {
      case "churn" -> churn(etcd, Integer.parseInt(args[2]), Integer.parseInt(args[3]));
      case "scale" -> scale(etcd);
      default -> throw new IllegalArgumentException("churn or scale");
    }
    System.exit(0);
  }

  private static void churn(URI etcd, int trials, int ttl) throws Exception {
    try (EtcdDiscovery discovery = new EtcdDiscovery(List.of(etcd), "bench", Duration.ofSeconds(ttl));
        WorkerPool pool = new WorkerPool(16, Duration.ofSeconds(60), Duration.ofMillis(500));
        Router router = Router.create(pool, Router.Config.of("round-robin"));
        DiscoveredWorkers followed = DiscoveredWorkers.follow(discovery, pool)) {
      double[] seen = new double[trials];
      double[] admitted = new double[trials];
      double[] firstRouted = new double[trials];
      double[] unroutable = new double[trials];
      double[] removed = new double[trials];
      Path logs = Files.createTempDirectory("tandem-churn");
      for (int t = 0; t < trials; t++) {
        String id = "churn-" + t;
        long start = System.nanoTime();
        Process worker = launchWorker(id, etcd, ttl, logs.resolve(id + ".log"));
        await(60, () -> followed.listed().containsKey(id));
        seen[t] = ms(start);
        await(60, () -> pool.routable().stream().anyMatch(w -> w.workerId().value().equals(id)));
        admitted[t] = ms(start);
        generate(router, id);
        firstRouted[t] = ms(start);
        long kill = System.nanoTime();
        worker.destroyForcibly().waitFor();
        await(ttl + 30, () -> pool.routable().stream().noneMatch(w -> w.workerId().value().equals(id)));
        unroutable[t] = ms(kill);
        await(ttl + 30, () -> !followed.listed().containsKey(id));
        removed[t] = ms(kill);
        System.out.printf(Locale.ROOT, "trial %d: seen %.0f ms, admitted %.0f ms, first routed %.0f ms after launch; after kill -9 unroutable %.0f ms, removed %.0f ms%n",
            t + 1, seen[t], admitted[t], firstRouted[t], unroutable[t], removed[t]);
      }
      System.out.printf(Locale.ROOT, "summary ttl_s=%d trials=%d%n", ttl, trials);
      report("launch -> registration seen", seen);
      report("launch -> admitted", admitted);
      report("launch -> first routed request answered", firstRouted);
      report("kill -9 -> not routed", unroutable);
      report("kill -9 -> removed (lease expiry)", removed);
    }
  }

  private static void scale(URI etcd) throws Exception {
    try (EtcdDiscovery discovery = new EtcdDiscovery(List.of(etcd), "scale", Duration.ofSeconds(10));
        EtcdDiscovery fakes = new EtcdDiscovery(List.of(etcd), "scale", Duration.ofSeconds(10));
        WorkerPool pool = new WorkerPool(16, Duration.ofSeconds(60), Duration.ofMillis(500));
        Router router = Router.create(pool, Router.Config.of("kv"));
        DiscoveredWorkers followed = DiscoveredWorkers.follow(discovery, pool)) {
      Path logs = Files.createTempDirectory("tandem-scale");
      List<Process> real = List.of(launchWorker("real-0", etcd, 10, logs.resolve("real-0.log"), "scale"),
          launchWorker("real-1", etcd, 10, logs.resolve("real-1.log"), "scale"));
      try {
        await(90, () -> pool.routable().size() == 2);
        System.out.println("quiet: 2 workers registered");
        measure(router, "quiet, 2 workers");
        int closedPort = freePort(); // nobody listens there
        List<Registration> registrations = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int i = 0; i < 1000; i++) {
          registrations.add(fakes.register(new WorkerRecord("sim-" + i, WorkerRole.AGGREGATED, "127.0.0.1:" + closedPort, null, "m", 16, 1000, "sim")));
        }
        await(60, () -> followed.listed().size() == 1002);
        System.out.printf(Locale.ROOT, "1,000 simulated workers registered and seen in %.0f ms%n", ms(t0));
        Thread churn = Thread.ofPlatform().daemon().start(() -> {
          int next = 0;
          while (!Thread.currentThread().isInterrupted()) {
            for (int k = 0; k < 100; k++) {
              int i = next++ % 1000;
              registrations.get(i).close();
              registrations.set(i, fakes.register(new WorkerRecord("sim-" + i, WorkerRole.AGGREGATED, "127.0.0.1:" + closedPort, null, "m", 16, 1000, "sim")));
            }
            try {
              Thread.sleep(1000);
            } catch (InterruptedException e) {
              return;
            }
          }
        });
        measure(router, "1,002 registered, 100 re-registered per second");
        churn.interrupt();
        System.out.printf(Locale.ROOT, "workers routable throughout: %d%n", pool.routable().size());
      } finally {
        real.forEach(Process::destroyForcibly);
      }
    }
  }

  /** Decision time: route + release, no generation, 20,000 times after 5,000 to warm up. */
  private static void measure(Router router, String label) {
    int[] prompt = new int[1024];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = 1000 + i;
    }
    double[] us = new double[20_000];
    for (int i = -5_000; i < us.length; i++) {
      var request = new GenerationRequest("m-" + i, prompt, SamplingParams.greedy(), StopConditions.maxTokens(1));
      long t = System.nanoTime();
      Route r = router.route(request, null);
      r.release();
      if (i >= 0) {
        us[i] = (System.nanoTime() - t) / 1e3;
      }
    }
    Arrays.sort(us);
    System.out.printf(Locale.ROOT, "decision (%s): p50 %.1f µs, p99 %.1f µs, max %.1f µs%n", label, us[us.length / 2], us[us.length * 99 / 100], us[us.length - 1]);
  }

  private static void generate(Router router, String worker) throws Exception {
    CompletableFuture<Void> done = new CompletableFuture<>();
    var request = new GenerationRequest("first-" + worker, new int[] {1, 2, 3, 4}, SamplingParams.greedy(), StopConditions.maxTokens(1));
    router.route(request, worker).start(new TokenListener() {
      @Override
      public void onChunk(TokenChunk chunk) {}

      @Override
      public void onError(GenerationException error) {
        done.completeExceptionally(error);
      }

      @Override
      public void onCompleted() {
        done.complete(null);
      }
    });
    done.get(30, TimeUnit.SECONDS);
  }

  private static Process launchWorker(String id, URI etcd, int ttl, Path log) throws Exception {
    return launchWorker(id, etcd, ttl, log, "bench");
  }

  private static Process launchWorker(String id, URI etcd, int ttl, Path log, String namespace) throws Exception {
    int port = freePort();
    return new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-cp", System.getProperty("java.class.path"), "dev.tandem.cli.Main", "worker", "--engine", "mocker", "--speedup-ratio", "0",
        "--port", Integer.toString(port), "--metrics-port", "-1", "--worker-id", id, "--discovery", "etcd",
        "--etcd-endpoints", etcd.toString(), "--discovery-namespace", namespace, "--discovery-ttl-s", Integer.toString(ttl))
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  private static int freePort() throws java.io.IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static void await(int seconds, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("not within " + seconds + " s");
      }
      Thread.sleep(5);
    }
  }

  private static double ms(long since) {
    return (System.nanoTime() - since) / 1e6;
  }

  private static void report(String what, double[] ms) {
    double[] s = ms.clone();
    Arrays.sort(s);
    System.out.printf(Locale.ROOT, "%s: p50 %.0f ms, p99 %.0f ms, max %.0f ms%n", what, s[s.length / 2], s[Math.min(s.length - 1, (int) Math.ceil(s.length * 0.99) - 1)], s[s.length - 1]);
  }
}
