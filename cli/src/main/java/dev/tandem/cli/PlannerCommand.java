package dev.tandem.cli;

import com.sun.net.httpserver.HttpServer;
import dev.tandem.planner.Planner;
import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.Pool;
import dev.tandem.planner.PoolLimits;
import dev.tandem.planner.Profile;
import dev.tandem.planner.ProfileException;
import dev.tandem.planner.ProfileJson;
import dev.tandem.planner.connect.Connector;
import dev.tandem.planner.connect.KubernetesConnector;
import dev.tandem.planner.connect.LocalConnector;
import dev.tandem.planner.connect.VirtualConnector;
import dev.tandem.planner.live.PlannerLoop;
import dev.tandem.planner.live.PlannerMetrics;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "planner",
    mixinStandardHelpOptions = true,
    description = {
      "Scales the prefill and decode pools to the load and the SLA.",
      "Every interval it reads the frontends' /metrics, forecasts the next intervals, sizes each pool (sla mode from a `tandem profile` JSON, load mode from queues and KV use), and acts through a connector: local (worker processes on this machine), kubernetes (the chart's Deployments) or virtual (decisions written to a file). Serves its own /metrics (tandem_planner_*)."
    })
final class PlannerCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(PlannerCommand.class);

  @Mixin PlannerOptions decide;

  @Option(names = "--frontend-url", defaultValue = "${env:TANDEM_FRONTEND_URL:-http://127.0.0.1:8000}", split = ",",
      description = "Frontends whose /metrics to read, comma-separated (default ${DEFAULT-VALUE}).")
  List<URI> frontends;

  @Option(names = "--connector", defaultValue = "${env:TANDEM_PLANNER_CONNECTOR:-virtual}", description = "local, kubernetes or virtual (default ${DEFAULT-VALUE}).")
  String connector;

  @Option(names = "--profile", defaultValue = "${env:TANDEM_PLANNER_PROFILE}", description = "Profile JSON from `tandem profile` for sla mode.")
  Path profile;

  @Option(names = "--model", description = "Model the workers serve, checked against the profile's (default: not checked).")
  String model;

  @Option(names = "--prefill-min", description = "Fewest prefill workers; 0 allows scale to zero (default 1, or 0 with --prefill-max 0).")
  Integer prefillMinOption;

  @Option(names = "--prefill-max", defaultValue = "8", description = "Most prefill workers (default ${DEFAULT-VALUE}).")
  int prefillMax;

  @Option(names = "--decode-min", description = "Fewest decode workers; 0 allows scale to zero (default 1).")
  Integer decodeMinOption;

  @Option(names = "--decode-max", defaultValue = "8", description = "Most decode workers (default ${DEFAULT-VALUE}).")
  int decodeMax;

  @Option(names = "--initial-prefill", description = "local: prefill workers to start with (default: --prefill-min).")
  Integer initialPrefill;

  @Option(names = "--initial-decode", description = "local: decode workers to start with (default: --decode-min, at least 1: a frontend learns the model card from a generating worker).")
  Integer initialDecode;

  @Option(names = "--api-key", defaultValue = "${env:TANDEM_API_KEY}", description = "API key to send to the frontends (when they run with --metrics-need-key).")
  String apiKey;

  @Option(names = "--zero-watch-s", defaultValue = "1",
      description = "While no generating worker is held (a pool at zero), look this often for a request waiting at a frontend and decide at once (default ${DEFAULT-VALUE}; 0: only at intervals).")
  double zeroWatchSeconds;

  @Option(names = "--advisory", description = "Decide, log and export metrics, but do not act.")
  boolean advisory;

  @Option(names = "--metrics-port", converter = PortConverter.class, defaultValue = "${env:TANDEM_PLANNER_METRICS_PORT:-9300}", description = "Port of the planner's /metrics and /health (0: none; default ${DEFAULT-VALUE}).")
  int metricsPort;

  @Option(names = "--worker-args", defaultValue = "", description = "local: arguments every worker gets, e.g. \"--engine mocker --discovery etcd --etcd-endpoints http://127.0.0.1:2379\".")
  String workerArgs;

  @Option(names = "--prefill-args", defaultValue = "", description = "local: extra arguments of prefill workers.")
  String prefillArgs;

  @Option(names = "--decode-args", defaultValue = "", description = "local: extra arguments of decode workers.")
  String decodeArgs;

  @Option(names = "--decode-role", defaultValue = "decode", description = "local: role of the generating pool's workers: decode (with a prefill pool) or agg (aggregated: they prefill too; set --prefill-max 0). Default ${DEFAULT-VALUE}.")
  String decodeRole;

  @Option(names = "--cpus-per-worker", defaultValue = "0", description = "local: pin each worker to its own range of this many CPUs (0: no pinning).")
  int cpusPerWorker;

  @Option(names = "--log-dir", defaultValue = "planner-workers", description = "local: where each worker's log goes (default ${DEFAULT-VALUE}).")
  Path logDir;

  @Option(names = "--worker-host", defaultValue = "127.0.0.1", description = "local: address the workers listen on (default ${DEFAULT-VALUE}).")
  String workerHost;

  @Option(names = "--kubernetes-namespace", defaultValue = "${env:TANDEM_KUBERNETES_NAMESPACE:-default}", description = "kubernetes: namespace of the Deployments (default ${DEFAULT-VALUE}).")
  String namespace;

  @Option(names = "--prefill-deployment", defaultValue = "${env:TANDEM_PREFILL_DEPLOYMENT:-tandem-prefill}", description = "kubernetes: the prefill Deployment (default ${DEFAULT-VALUE}).")
  String prefillDeployment;

  @Option(names = "--decode-deployment", defaultValue = "${env:TANDEM_DECODE_DEPLOYMENT:-tandem-decode}", description = "kubernetes: the decode Deployment (default ${DEFAULT-VALUE}).")
  String decodeDeployment;

  @Option(names = "--decisions-file", defaultValue = "planner-decisions.jsonl", description = "virtual: where decisions go, one JSON line each (default ${DEFAULT-VALUE}).")
  Path decisionsFile;

  @Override
  public Integer call() throws Exception {
    int prefillMin = prefillMinOption != null ? prefillMinOption : Math.min(1, prefillMax);
    int decodeMin = decodeMinOption != null ? decodeMinOption : Math.min(1, decodeMax);
    for (String pool : new String[] {"prefill", "decode"}) {
      int min = pool.equals("prefill") ? prefillMin : decodeMin;
      int max = pool.equals("prefill") ? prefillMax : decodeMax;
      if (min < 0 || min > max) {
        throw new IllegalArgumentException("--" + pool + "-min and --" + pool + "-max need 0 <= min <= max, were " + min + " and " + max);
      }
    }
    Profile p = null;
    if (profile != null) {
      try {
        p = ProfileJson.read(profile, model);
      } catch (ProfileException e) {
        log.error("{}; the planner stays in load mode", e.getMessage());
      }
    } else if (decide.mode.equals("sla")) {
      log.warn("sla mode needs --profile (write one with `tandem profile`); the planner stays in load mode");
    }
    PlannerConfig config = decide.builder(p)
        .prefillLimits(new PoolLimits(prefillMin, prefillMax)).decodeLimits(new PoolLimits(decodeMin, decodeMax)).build();
    PlannerMetrics metrics = new PlannerMetrics();
    Connector c = connector();
    HttpServer server = metricsPort > 0 ? serve(metrics) : null;
    PlannerLoop loop = new PlannerLoop(new Planner(config), c,
        new PlannerLoop.Options(frontends, Duration.ofMillis((long) (decide.intervalSeconds * 1000)), advisory,
            apiKey == null ? null : apiKey.split(",")[0].strip(), Duration.ofMillis((long) (zeroWatchSeconds * 1000))), metrics);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      log.info("planner stopping");
      loop.close();
      c.close(); // local: drains the workers it started
      if (server != null) {
        server.stop(0);
      }
      stopped.countDown();
    }, "planner-shutdown"));
    if (c instanceof LocalConnector && !advisory) {
      // Start at the minimums (one decode worker at least: a frontend learns the model card from a
      // generating worker), so that a frontend waiting for workers gets them without a first interval.
      try {
        c.scale(Pool.PREFILL, initialPrefill != null ? initialPrefill : prefillMin, List.of());
        c.scale(Pool.DECODE, initialDecode != null ? initialDecode : Math.max(1, decodeMin), List.of());
      } catch (dev.tandem.planner.connect.ConnectorException e) {
        log.error("cannot start the first workers: {}; the planner keeps trying every interval", e.getMessage());
      }
    }
    loop.start();
    stopped.await();
    return 0;
  }

  private Connector connector() throws Exception {
    return switch (connector) {
      case "virtual" -> new VirtualConnector(decisionsFile);
      case "kubernetes" -> new KubernetesConnector(new KubernetesClientBuilder().build(), namespace, prefillDeployment, decodeDeployment);
      case "local" -> {
        Map<Pool, List<String>> args = new EnumMap<>(Pool.class);
        args.put(Pool.PREFILL, concat(split(workerArgs), split(prefillArgs)));
        args.put(Pool.DECODE, concat(split(workerArgs), split(decodeArgs)));
        if (!decodeRole.equals("decode") && !decodeRole.equals("agg")) {
          throw new IllegalArgumentException("--decode-role must be decode or agg, was " + decodeRole);
        }
        yield new LocalConnector(new LocalConnector.Spec(launcher(), Map.of(Pool.PREFILL, "prefill", Pool.DECODE, decodeRole), args,
            logDir, cpusPerWorker, workerHost));
      }
      default -> throw new IllegalArgumentException("--connector must be local, kubernetes or virtual, was " + connector);
    };
  }

  /** This JVM's own command: the same Java, flags and class path run {@code tandem worker}. */
  static List<String> launcher() {
    String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    return List.of(java, "--sun-misc-unsafe-memory-access=allow", "--add-modules", "jdk.incubator.vector",
        "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName());
  }

  private static List<String> split(String s) {
    return s.isBlank() ? List.of() : Arrays.asList(s.trim().split("\\s+"));
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> out = new ArrayList<>(a);
    out.addAll(b);
    return out;
  }

  private HttpServer serve(PlannerMetrics metrics) throws java.io.IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(metricsPort), 0);
    server.createContext("/metrics", ex -> {
      byte[] body = metrics.scrape().getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4");
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    server.createContext("/health", ex -> {
      ex.sendResponseHeaders(200, -1);
      ex.close();
    });
    server.start();
    log.info("planner metrics on http://0.0.0.0:{}/metrics", server.getAddress().getPort());
    return server;
  }
}
