package dev.tandem.cli;

import dev.tandem.frontend.http.FrontendServer;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Runs every role in one process: workers, router and the OpenAI-compatible HTTP frontend.",
      "With no arguments: one mocker worker behind http://0.0.0.0:8000 serving the bundled Qwen3 tokenizer."
    })
final class ServeCommand implements Callable<Integer> {
  @Option(names = "--host", defaultValue = "${env:TANDEM_HOST:-0.0.0.0}", description = "HTTP address to bind (default ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--port", defaultValue = "${env:TANDEM_PORT:-8000}", description = "HTTP port (default ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--workers", defaultValue = "${env:TANDEM_WORKERS:-1}", description = "Aggregated workers to start (default ${DEFAULT-VALUE}).")
  int workers;

  @Option(names = "--engine", defaultValue = "${env:TANDEM_ENGINE:-mocker}", description = "Engine: mocker (default ${DEFAULT-VALUE}).")
  String engine;

  @Option(names = "--mode", defaultValue = "agg", description = "Serving mode: agg (default ${DEFAULT-VALUE}).")
  String mode;

  @Mixin RouterOptions router;

  @Option(names = "--max-body-bytes", defaultValue = "33554432", description = "Largest request body accepted (default ${DEFAULT-VALUE}).")
  int maxBodyBytes;

  @Mixin MockerOptions mocker;

  @Override
  public Integer call() throws Exception {
    Engines.requireMocker(engine);
    if (!mode.equals("agg")) {
      throw new IllegalArgumentException(
          "--mode " + mode + " is not implemented yet: disaggregated serving (prefill and decode pools) is planned; use --mode agg");
    }
    if (workers < 1) {
      throw new IllegalArgumentException("--workers must be at least 1");
    }
    var spec =
        new LocalDeployment.Spec(
            workers,
            mocker.config(),
            mocker.modelFiles(),
            router.config(),
            new FrontendServer.Config(host, port, maxBodyBytes));
    LocalDeployment deployment = LocalDeployment.start(spec);
    Runtime.getRuntime().addShutdownHook(new Thread(deployment::close));
    System.out.println(
        "Tandem is serving " + deployment.model().name() + " at http://" + host + ":" + deployment.port() + "/v1 (Ctrl-C stops it)");
    deployment.frontend().awaitClose();
    return 0;
  }
}
