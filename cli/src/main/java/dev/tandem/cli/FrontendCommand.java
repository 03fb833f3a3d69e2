package dev.tandem.cli;

import dev.tandem.discovery.Discovery;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.EventLoops;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.router.grpc.DiscoveredWorkers;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerPool;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "frontend",
    mixinStandardHelpOptions = true,
    description = "Runs the OpenAI-compatible HTTP frontend and router over workers named by address (--worker) or found through discovery (--discovery etcd|kubernetes).")
final class FrontendCommand implements Callable<Integer> {
  @Option(names = "--worker", split = ",", description = "Worker gRPC address host:port; repeat or comma-separate for several. Required with --discovery static.")
  List<String> workers;

  @Mixin HttpOptions http;

  @Mixin RouterOptions routerOptions;

  @Mixin DiscoveryOptions discovery;

  @Mixin TlsOptions tls;

  @Option(names = "--block-size", defaultValue = "${env:TANDEM_BLOCK_SIZE:-16}", description = "The router's KV block size; workers with another are refused (default ${DEFAULT-VALUE}).")
  int blockSize;

  @Option(names = "--worker-connect-timeout-s", defaultValue = "${env:TANDEM_WORKER_CONNECT_TIMEOUT_S:-300}",
      description = "How long to wait for each worker to answer at start (and, with discovery, for the first worker to register): workers with a KV transfer backend warm their engine up before they listen, a minute or more for a large model on CPU (default ${DEFAULT-VALUE}).")
  int connectTimeoutSeconds;

  @Option(names = "--worker-unresponsive-s", defaultValue = "${env:TANDEM_WORKER_UNRESPONSIVE_S:-5}",
      description = "A worker whose load reports (every 0.5 s, from its own timer) stop this long is taken for stopped: no new requests until it reports again, and its streams move to other workers (--migration-limit). 0: only gRPC keepalive notices, in about 15 s (default ${DEFAULT-VALUE}).")
  double unresponsiveSeconds;

  @Option(names = "--worker-step-timeout-s", defaultValue = "${env:TANDEM_WORKER_STEP_TIMEOUT_S:-60}",
      description = "A worker whose engine step has run this long (its reports say so; its engine is hung while its process answers) takes no new requests until the step ends, and its streams move to other workers. 0: never (default ${DEFAULT-VALUE}).")
  double stepTimeoutSeconds;

  @Option(names = "--drain-timeout-s", defaultValue = "${env:TANDEM_DRAIN_TIMEOUT_S:-60}",
      description = "On SIGTERM: stop accepting, then wait this long for the requests in flight to finish before exiting (default ${DEFAULT-VALUE}).")
  int drainTimeoutSeconds;

  @Override
  public Integer call() throws Exception {
    Flags.atLeast("--block-size", blockSize, 1);
    Flags.atLeast("--worker-connect-timeout-s", connectTimeoutSeconds, 0);
    Flags.nonNegative("--worker-unresponsive-s", unresponsiveSeconds);
    Flags.nonNegative("--worker-step-timeout-s", stepTimeoutSeconds);
    Flags.atLeast("--drain-timeout-s", drainTimeoutSeconds, 0);
    if (discovery.isStatic() && (workers == null || workers.isEmpty())) {
      throw new IllegalArgumentException("--worker: name at least one worker, or find them with --discovery etcd|kubernetes");
    }
    Duration connectTimeout = Duration.ofSeconds(connectTimeoutSeconds);
    EventLoops loops = EventLoops.create();
    WorkerPool pool = new WorkerPool(blockSize, connectTimeout, LocalDeployment.LOAD_INTERVAL, tls.tls(), LocalDeployment.lanes(loops));
    pool.unresponsiveAfter(Duration.ofMillis((long) (unresponsiveSeconds * 1000)));
    pool.stepTimeout(Duration.ofMillis((long) (stepTimeoutSeconds * 1000)));
    Router router = Router.create(pool, routerOptions.config());
    Discovery found = discovery.open(workers);
    router.describeDiscovery(found.describe());
    DiscoveredWorkers followed = null;
    if (discovery.isStatic()) {
      // Named workers must all answer at start; a refusal (model, block size) stops the frontend.
      System.out.println("frontend: waiting up to " + connectTimeoutSeconds + " s for " + String.join(", ", workers)
          + " to answer (--worker-connect-timeout-s)");
      for (String address : workers) {
        pool.add(address);
      }
    } else {
      followed = DiscoveredWorkers.follow(found, pool);
      System.out.println("frontend: waiting for workers from " + found.describe());
      if (!pool.awaitGenerating(connectTimeout)) {
        throw new IllegalStateException("no decode or aggregated worker registered in " + found.describe() + " within " + connectTimeoutSeconds
            + " s (--worker-connect-timeout-s)" + (pool.refused().isEmpty() ? "" : "; refused: " + pool.refused()));
      }
    }
    FrontendServer.Config config = http.config();
    ServedModel model = LocalDeployment.servedModel(pool, connectTimeout, config.chatTemplate());
    FrontendMetrics metrics = LocalDeployment.metrics(router);
    FrontendServer server = FrontendServer.start(config, model, router, metrics, loops);
    DiscoveredWorkers following = followed;
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        server.drain(Duration.ofSeconds(drainTimeoutSeconds), metrics);
      } catch (InterruptedException e) {
        server.close();
      }
      if (following != null) {
        following.close();
      }
      router.close();
      pool.close();
      found.close();
      loops.close();
    }, "frontend-drain"));
    System.out.println("frontend serving " + model.name() + " at http://" + http.host + ":" + server.port() + "/v1 over "
        + (discovery.isStatic() ? workers.size() + " worker(s)" : "workers from " + found.describe()));
    server.awaitClose();
    return 0;
  }
}
