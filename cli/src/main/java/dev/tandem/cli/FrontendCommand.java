package dev.tandem.cli;

import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.FrontendServer;
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
    description = "Runs the OpenAI-compatible HTTP frontend and router over workers given by address.")
final class FrontendCommand implements Callable<Integer> {
  @Option(names = "--worker", required = true, split = ",", description = "Worker gRPC address host:port; repeat or comma-separate for several.")
  List<String> workers;

  @Mixin HttpOptions http;

  @Mixin RouterOptions routerOptions;

  @Option(names = "--block-size", defaultValue = "${env:TANDEM_BLOCK_SIZE:-16}", description = "The router's KV block size; workers with another are refused (default ${DEFAULT-VALUE}).")
  int blockSize;

  @Option(names = "--worker-connect-timeout-s", defaultValue = "${env:TANDEM_WORKER_CONNECT_TIMEOUT_S:-300}",
      description = "How long to wait for each worker to answer at start: workers with a KV transfer backend warm their engine up before they listen, a minute or more for a large model on CPU (default ${DEFAULT-VALUE}).")
  int connectTimeoutSeconds;

  @Override
  public Integer call() throws Exception {
    Duration connectTimeout = Duration.ofSeconds(connectTimeoutSeconds);
    WorkerPool pool = new WorkerPool(blockSize, connectTimeout, LocalDeployment.LOAD_INTERVAL);
    for (String address : workers) {
      pool.add(address);
    }
    ServedModel model = LocalDeployment.servedModel(pool, connectTimeout);
    Router router = Router.create(pool, routerOptions.config());
    FrontendServer server =
        FrontendServer.start(http.config(), model, router, LocalDeployment.metrics(router));
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      router.close();
      pool.close();
    }));
    System.out.println("frontend serving " + model.name() + " at http://" + http.host + ":" + server.port() + "/v1 over " + workers.size() + " worker(s)");
    server.awaitClose();
    return 0;
  }
}
