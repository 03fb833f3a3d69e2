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
      "With no arguments: one builtin-engine worker with a tiny generated Qwen3-shaped model (created on first use) behind http://0.0.0.0:8000.",
      "Serve a real model with --model DIR (a Hugging Face directory: config.json, *.safetensors, tokenizer.json)."
    })
final class ServeCommand implements Callable<Integer> {
  @Option(names = "--workers", defaultValue = "${env:TANDEM_WORKERS:-1}", description = "Aggregated workers to start (default ${DEFAULT-VALUE}).")
  int workers;

  @Option(names = "--mode", defaultValue = "agg", description = "Serving mode: agg (default ${DEFAULT-VALUE}).")
  String mode;

  @Mixin HttpOptions http;

  @Mixin RouterOptions router;

  @Mixin EngineOptions engine;

  @Override
  public Integer call() throws Exception {
    if (!mode.equals("agg")) {
      throw new IllegalArgumentException(
          "--mode " + mode + " is not implemented yet: disaggregated serving (prefill and decode pools) is planned; use --mode agg");
    }
    if (workers < 1) {
      throw new IllegalArgumentException("--workers must be at least 1");
    }
    EngineOptions.WorkerEngines engines = engine.resolve();
    var spec =
        new LocalDeployment.Spec(
            workers, engines.factory(), engines.modelFiles(), engines.blockSize(), router.config(), http.config());
    LocalDeployment deployment = LocalDeployment.start(spec);
    Runtime.getRuntime().addShutdownHook(new Thread(deployment::close));
    System.out.println(
        "Tandem is serving " + deployment.model().name() + " at http://" + http.host + ":" + deployment.port() + "/v1 (Ctrl-C stops it)");
    deployment.frontend().awaitClose();
    return 0;
  }
}
