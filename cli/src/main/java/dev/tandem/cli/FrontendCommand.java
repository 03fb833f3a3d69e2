package dev.tandem.cli;

import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerPool;
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

  @Override
  public Integer call() throws Exception {
    WorkerPool pool = new WorkerPool(blockSize, LocalDeployment.CONNECT_TIMEOUT, LocalDeployment.LOAD_INTERVAL);
    for (String address : workers) {
      pool.add(address);
    }
    ServedModel model = ServedModel.fromWorker(pool.all().getFirst(), LocalDeployment.CONNECT_TIMEOUT);
    Router router = Router.create(pool, routerOptions.config());
    FrontendServer server =
        FrontendServer.start(http.config(), model, router, new FrontendMetrics());
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
