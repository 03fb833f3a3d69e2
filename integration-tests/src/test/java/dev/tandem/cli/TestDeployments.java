package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.router.grpc.Router;
import dev.tandem.worker.WorkerServer;
import java.util.concurrent.TimeUnit;

/** Starts in-process deployments for tests and checks that KV pools are back to full. */
final class TestDeployments {
  static final String MODEL = MockerConfig.DEFAULT_MODEL_NAME;

  private TestDeployments() {}

  static LocalDeployment start(int workers, TimingModel timing, int maxBodyBytes) {
    return start(workers, timing, maxBodyBytes, Router.Config.of("round-robin"));
  }

  static LocalDeployment start(int workers, TimingModel timing, int maxBodyBytes, Router.Config router) {
    MockerConfig mocker = MockerConfig.defaults().withTiming(timing).withPool(2048, 16).withMaxContextLength(4096);
    return LocalDeployment.start(
        LocalDeployment.Spec.mocker(
            workers, mocker, ModelFiles.bundledQwen3(), router,
            new FrontendServer.Config("127.0.0.1", 0, maxBodyBytes)));
  }

  /**
   * {@code workers} built-in engines on the generated "tiny" model (Qwen3-shaped, the real Qwen3
   * tokenizer) written under {@code dir}, served by name "tiny", KV routing.
   */
  static LocalDeployment builtinTiny(java.nio.file.Path dir, int workers, int threads) throws java.io.IOException {
    return builtin(tinyModel(dir), workers, threads, new FrontendServer.Config("127.0.0.1", 0, 1 << 20));
  }

  /** The generated tiny model (seed 0, bf16) written to {@code dir/tiny}. */
  static java.nio.file.Path tinyModel(java.nio.file.Path dir) throws java.io.IOException {
    java.nio.file.Path model = dir.resolve("tiny");
    dev.tandem.engine.modeltools.ModelGenerator.write(
        dev.tandem.engine.modeltools.ModelGenerator.shape("tiny"), dev.tandem.engine.model.DType.BF16, 0, model, 0);
    return model;
  }

  /** The model directory {@code model} served by {@code workers} built-in workers (KV routing) behind {@code frontend}. */
  static LocalDeployment builtin(java.nio.file.Path model, int workers, int threads, FrontendServer.Config frontend) {
    return builtin(model, workers, threads, frontend, c -> c);
  }

  /** As {@link #builtin(java.nio.file.Path, int, int, FrontendServer.Config)}, each engine's settings changed by {@code settings}. */
  static LocalDeployment builtin(java.nio.file.Path model, int workers, int threads, FrontendServer.Config frontend,
      java.util.function.UnaryOperator<dev.tandem.engine.builtin.BuiltinConfig> settings) {
    dev.tandem.engine.builtin.BuiltinConfig config = settings.apply(
        dev.tandem.engine.builtin.BuiltinConfig.of(model).withCompute("cpu", threads).withKvCacheBytes(64L << 20));
    return LocalDeployment.start(
        new LocalDeployment.Spec(
            workers, () -> dev.tandem.engine.builtin.BuiltinEngine.open(config), ModelFiles.fromDirectory(model), 16,
            Router.Config.of("kv"), frontend));
  }

  private static final java.net.http.HttpClient HTTP = java.net.http.HttpClient.newHttpClient();

  /** POSTs the JSON {@code body} to the deployment's frontend at {@code path}. */
  static java.net.http.HttpResponse<String> post(LocalDeployment d, String path, String body) throws Exception {
    return HTTP.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + d.port() + path))
        .header("content-type", "application/json").POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
  }

  /** A 200 response's JSON body (fails the test with the body otherwise). */
  static com.fasterxml.jackson.databind.JsonNode json(java.net.http.HttpResponse<String> r) throws Exception {
    org.junit.jupiter.api.Assertions.assertEquals(200, r.statusCode(), r.body());
    return new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.body());
  }

  /** GETs {@code path} from the deployment's frontend. */
  static java.net.http.HttpResponse<String> get(LocalDeployment d, String path) throws Exception {
    return HTTP.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + d.port() + path)).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
  }

  /** The sum of a Prometheus metric's samples (every label set) that {@code metricsUrl} serves now. */
  static double metric(java.net.URI metricsUrl, String name) throws Exception {
    try (java.net.http.HttpClient c = java.net.http.HttpClient.newHttpClient()) {
      return sample(c.send(java.net.http.HttpRequest.newBuilder(metricsUrl).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString()).body(), name);
    }
  }

  /** The sum of a Prometheus metric's samples (every label set) in the exposition {@code text}. */
  static double sample(String text, String name) {
    return text.lines().filter(l -> l.startsWith(name + " ") || l.startsWith(name + "{"))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  static int usedBlocks(WorkerServer w) throws Exception {
    return w.loop().call(e -> e.load().kvBlocksUsed()).get(5, TimeUnit.SECONDS);
  }

  static int activeRequests(WorkerServer w) throws Exception {
    return w.loop().call(e -> e.load().runningRequests() + e.load().waitingRequests()).get(5, TimeUnit.SECONDS);
  }

  /** A port nobody listens on now. */
  static int freePort() throws java.io.IOException {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** The command line that runs {@code tandem ARGS} in a JVM of its own, on this test's class path. */
  static java.util.List<String> tandemCommand(String... args) {
    java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(
        java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"), Main.class.getName()));
    cmd.addAll(java.util.List.of(args));
    return cmd;
  }

  /** Waits for {@code condition}, failing with {@code what} after {@code seconds}. */
  /**
   * Stops every process: SIGTERM ({@code graceful}: then SIGKILL what is still there after {@code
   * seconds}) or SIGKILL at once, waiting up to {@code seconds} for each.
   */
  static void stopAll(java.util.List<Process> processes, boolean graceful, int seconds) throws InterruptedException {
    for (Process p : processes) {
      if (graceful) {
        p.destroy();
      } else {
        p.destroyForcibly();
      }
    }
    for (Process p : processes) {
      if (!p.waitFor(seconds, TimeUnit.SECONDS) && graceful) {
        p.destroyForcibly();
      }
    }
  }

  static void await(String what, int seconds, java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + seconds + " s: " + what);
      }
      Thread.sleep(50);
    }
  }

  /**
   * The port a process started with {@code --port 0} printed to {@code log} on the first line
   * matching {@code line} (its group 1), within {@code seconds}: no port is chosen before the
   * process binds it, so nothing else can take it in between. Fails, showing the log, when the
   * process exits first.
   */
  static int printedPort(Process p, java.nio.file.Path log, java.util.regex.Pattern line, int seconds) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (true) {
      String text = java.nio.file.Files.exists(log) ? java.nio.file.Files.readString(log) : "";
      java.util.regex.Matcher m = line.matcher(text);
      if (m.find()) {
        return Integer.parseInt(m.group(1));
      }
      if (!p.isAlive()) {
        throw new AssertionError(log.getFileName() + ": the process exited (" + p.exitValue() + ") before printing its port:\n" + text);
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(log.getFileName() + ": no port printed within " + seconds + " s:\n" + text);
      }
      Thread.sleep(50);
    }
  }

  /** What {@code tandem worker} prints once it listens: its gRPC port is group 1. */
  static final java.util.regex.Pattern WORKER_LISTENING = java.util.regex.Pattern.compile("worker \\S+ listening on [^\\s:]+:(\\d+)");

  /** What {@code tandem frontend} prints once it serves HTTP: its port is group 1. */
  static final java.util.regex.Pattern FRONTEND_SERVING = java.util.regex.Pattern.compile("frontend serving \\S+ at http://[^\\s:]+:(\\d+)/v1");

  /** Every worker's pool is full again (waits briefly: cancellations are asynchronous). */
  static void assertPoolsFull(LocalDeployment d) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    for (WorkerServer w : d.workers()) {
      while ((usedBlocks(w) > 0 || activeRequests(w) > 0) && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(0, activeRequests(w), "requests left on " + w.workerId());
      assertEquals(0, usedBlocks(w), "KV blocks still held on " + w.workerId());
    }
  }
}
