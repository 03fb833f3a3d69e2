package dev.tandem.cli;

import dev.tandem.common.WorkerId;
import dev.tandem.proto.worker.v1.WorkerRole;
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
  @Option(names = "--role", defaultValue = "${env:TANDEM_ROLE:-agg}", description = "agg (prefill and decode pools come with disaggregated serving; default ${DEFAULT-VALUE}).")
  String role;

  @Option(names = "--host", defaultValue = "${env:TANDEM_WORKER_HOST:-127.0.0.1}", description = "gRPC address to bind (default ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--port", defaultValue = "${env:TANDEM_WORKER_PORT:-9000}", description = "gRPC port (default ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--worker-id", defaultValue = "${env:TANDEM_WORKER_ID}", description = "Worker id (default: worker-<host>-<port>).")
  String workerId;

  @Option(names = "--event-ring", defaultValue = "10000", description = "KV events kept for replay (default ${DEFAULT-VALUE}).")
  int eventRing;

  @Option(names = "--no-kv-events", description = "Publish no KV events (routers then detect it and route this worker approximately).")
  boolean noKvEvents;

  @Mixin EngineOptions engine;

  @Override
  public Integer call() throws Exception {
    if (!role.equals("agg")) {
      throw new IllegalArgumentException(
          "--role " + role + " is not implemented yet: prefill and decode workers come with disaggregated serving; use --role agg");
    }
    String id = workerId == null ? "worker-" + host + "-" + port : workerId;
    EngineOptions.WorkerEngines engines = engine.resolve();
    var config = new WorkerServer.Config(host, port, new WorkerId(id), WorkerRole.WORKER_ROLE_AGGREGATED, engines.modelFiles(), eventRing, !noKvEvents);
    WorkerServer worker = WorkerServer.start(config, engines.factory().get());
    Runtime.getRuntime().addShutdownHook(new Thread(worker::close));
    System.out.println("worker " + id + " listening on " + worker.address());
    worker.awaitTermination();
    return 0;
  }
}
