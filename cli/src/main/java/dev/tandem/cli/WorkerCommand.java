package dev.tandem.cli;

import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerRole;
import dev.tandem.discovery.Discovery;
import dev.tandem.discovery.Registration;
import dev.tandem.discovery.WorkerRecord;
import dev.tandem.worker.WorkerServer;
import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "worker",
    mixinStandardHelpOptions = true,
    description = "Runs one worker serving the gRPC worker API.")
final class WorkerCommand implements Callable<Integer> {
  @Option(names = "--role", defaultValue = "${env:TANDEM_ROLE:-agg}", description = "agg (prefills and decodes its own requests), prefill (computes prompts' KV for decode workers) or decode (pulls KV from prefill workers, then generates); default ${DEFAULT-VALUE}.")
  String role;

  @Option(names = "--host", defaultValue = "${env:TANDEM_WORKER_HOST:-127.0.0.1}", description = "gRPC address to bind (default ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--port", converter = PortConverter.class, defaultValue = "${env:TANDEM_WORKER_PORT:-9000}", description = "gRPC port (default ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--worker-id", defaultValue = "${env:TANDEM_WORKER_ID}", description = "Worker id (default: worker-<host>-<port>).")
  String workerId;

  @Option(names = "--metrics-port", defaultValue = "${env:TANDEM_METRICS_PORT}",
      description = "HTTP port serving this worker's /metrics (Prometheus) and /health; -1 for none (default: the gRPC port + 100).")
  Integer metricsPort;

  @Option(names = "--event-ring", defaultValue = "10000", description = "KV events kept for replay (default ${DEFAULT-VALUE}).")
  int eventRing;

  @Option(names = "--no-kv-events", description = "Publish no KV events (routers then detect it and route this worker approximately).")
  boolean noKvEvents;

  @Option(names = "--allow-runtime-lora-updating", defaultValue = "${env:TANDEM_ALLOW_RUNTIME_LORA_UPDATING:-false}",
      description = "Take LoRA adapter loads and unloads while serving (a frontend's /v1/load_lora_adapter; default ${DEFAULT-VALUE}).")
  boolean loraUpdates;

  @Option(names = "--no-kv-transfer", description = "agg only: start no KV transfer agent (the worker then always prefills its own prompts).")
  boolean noKvTransfer;

  @Mixin EngineOptions engine;

  @Mixin KvTransferOptions transfer;

  @Mixin DiscoveryOptions discovery;

  @Mixin TlsOptions tls;

  @Option(names = "--advertise-host", defaultValue = "${env:TANDEM_ADVERTISE_HOST}",
      description = "The host routers reach this worker at, as registered in discovery (default: --host, or this machine's address when --host is 0.0.0.0).")
  String advertiseHost;

  @Option(names = "--drain-timeout-s", defaultValue = "${env:TANDEM_DRAIN_TIMEOUT_S:-60}",
      description = "On SIGTERM or POST /drain: leave discovery, take no new requests, and wait this long for those in flight before exiting 0 (default ${DEFAULT-VALUE}).")
  int drainTimeoutSeconds;

  @Override
  public Integer call() throws Exception {
    WorkerRole workerRole;
    try {
      workerRole = WorkerRole.parse(role);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--role: " + e.getMessage());
    }
    if (noKvTransfer && workerRole != WorkerRole.AGGREGATED) {
      throw new IllegalArgumentException("--no-kv-transfer: a " + role + " worker moves KV by definition");
    }
    Flags.atLeast("--drain-timeout-s", drainTimeoutSeconds, 0);
    String id = workerId == null ? role + "-" + host + "-" + port : workerId;
    EngineOptions.WorkerEngines engines = engine.resolve(loraUpdates);
    // Aggregated builtin workers get an agent too, so that a router can still split onto them.
    WorkerServer.KvTransfer kv = noKvTransfer || (engine.isMocker() && workerRole == WorkerRole.AGGREGATED) ? null : transfer.config(host);
    var config =
        WorkerServer.Config.local(new WorkerId(id))
            .withHost(host)
            .withPort(port)
            .withRole(workerRole, kv)
            .withModelFiles(engines.modelFiles())
            .withEventRing(eventRing)
            .withKvEvents(!noKvEvents)
            .withMetricsPort(metricsPort != null ? metricsPort : port == 0 ? 0 : port + 100)
            .withTls(tls.tls())
            .withLoraUpdates(loraUpdates);
    WorkerServer worker = WorkerServer.start(config, engines.factory().get());
    Discovery registry = discovery.isStatic() ? null : discovery.open(List.of());
    Registration registration = registry == null ? null : registry.register(record(worker));
    AtomicBoolean stopping = new AtomicBoolean();
    Runnable drainAndStop = () -> {
      if (!stopping.compareAndSet(false, true)) {
        return;
      }
      try {
        worker.drain(Duration.ofSeconds(drainTimeoutSeconds), registration == null ? () -> {} : registration::close);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      worker.close();
      if (registry != null) {
        registry.close();
      }
    };
    worker.onDrainRequest(() -> {
      drainAndStop.run();
      System.exit(0);
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      drainAndStop.run();
      // A drained worker exits 0 on SIGTERM, as Kubernetes expects of a clean stop (not 143).
      Runtime.getRuntime().halt(0);
    }, "worker-drain"));
    System.out.println("worker " + id + " listening on " + worker.address()
        + (worker.metricsPort() < 0 ? "" : "; metrics on http://" + host + ":" + worker.metricsPort() + "/metrics")
        + (registry == null ? "" : "; registered in " + registry.describe()));
    worker.awaitTermination();
    return 0;
  }

  /** What this worker registers: where routers reach it and what it serves. */
  private WorkerRecord record(WorkerServer worker) throws java.net.UnknownHostException {
    String advertised = advertiseHost != null ? advertiseHost
        : host.equals("0.0.0.0") || host.equals("::") ? InetAddress.getLocalHost().getHostAddress() : host;
    WorkerDescription d = worker.description();
    String transfer = d.kvTransferAddress().isEmpty() ? null : d.kvTransferAddress();
    return new WorkerRecord(d.workerId().value(), d.role(), advertised + ":" + worker.port(), transfer,
        d.modelName(), d.blockSize(), d.totalKvBlocks(), d.host());
  }
}
