package dev.tandem.cli;

import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerRole;
import dev.tandem.worker.WorkerServer;
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

  @Option(names = "--port", defaultValue = "${env:TANDEM_WORKER_PORT:-9000}", description = "gRPC port (default ${DEFAULT-VALUE}).")
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

  @Option(names = "--no-kv-transfer", description = "agg only: start no KV transfer agent (the worker then always prefills its own prompts).")
  boolean noKvTransfer;

  @Mixin EngineOptions engine;

  @Mixin KvTransferOptions transfer;

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
    String id = workerId == null ? role + "-" + host + "-" + port : workerId;
    EngineOptions.WorkerEngines engines = engine.resolve();
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
            .withMetricsPort(metricsPort != null ? metricsPort : port == 0 ? 0 : port + 100);
    WorkerServer worker = WorkerServer.start(config, engines.factory().get());
    Runtime.getRuntime().addShutdownHook(new Thread(worker::close));
    System.out.println("worker " + id + " listening on " + worker.address()
        + (worker.metricsPort() < 0 ? "" : "; metrics on http://" + host + ":" + worker.metricsPort() + "/metrics"));
    worker.awaitTermination();
    return 0;
  }
}
