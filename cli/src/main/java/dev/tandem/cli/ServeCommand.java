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
  @Option(names = "--workers", defaultValue = "${env:TANDEM_WORKERS:-1}", description = "Aggregated workers (agg) or decode workers (disagg) to start (default ${DEFAULT-VALUE}).")
  int workers;

  @Option(names = "--prefill-workers", defaultValue = "${env:TANDEM_PREFILL_WORKERS:-1}", description = "disagg: prefill workers to start (default ${DEFAULT-VALUE}).")
  int prefillWorkers;

  @Option(names = "--mode", defaultValue = "${env:TANDEM_SERVE_MODE:-agg}", description = "agg: workers prefill and decode their own requests; disagg: prefill and decode workers, each pinned to its own CPUs, KV moved between them, split per request by --disagg (default ${DEFAULT-VALUE}).")
  String mode;

  @Option(names = "--no-pin-cpus", description = "disagg: do not pin workers to disjoint CPU shares (they then compete for the same cores, and --disagg auto keeps prompts local).")
  boolean noPinCpus;

  @Mixin KvTransferOptions transfer;

  @Mixin HttpOptions http;

  @Mixin RouterOptions router;

  @Mixin EngineOptions engine;

  @Mixin TlsOptions tls;

  @Override
  public Integer call() throws Exception {
    boolean disagg =
        switch (mode) {
          case "agg" -> false;
          case "disagg" -> true;
          default -> throw new IllegalArgumentException("unknown --mode '" + mode + "'; known: agg, disagg");
        };
    if (workers < 1) {
      throw new IllegalArgumentException("--workers must be at least 1");
    }
    if (disagg && prefillWorkers < 1) {
      throw new IllegalArgumentException("--mode disagg needs --prefill-workers of at least 1");
    }
    if (disagg && engine.isMocker()) {
      throw new IllegalArgumentException("--mode disagg moves real KV and needs --engine builtin");
    }
    EngineOptions.WorkerEngines engines = engine.resolve(http.loraUpdates);
    var spec =
        new LocalDeployment.Spec(workers, engines.factory(), engines.modelFiles(), engines.blockSize(), router.config(), http.config());
    if (disagg) {
      if (transfer.port != 0) {
        throw new IllegalArgumentException("--kv-transfer-port: serve runs several workers in one process, each with its own agent;"
            + " fix ports per worker with tandem worker instead");
      }
      spec = spec.withDisaggregation(prefillWorkers, transfer.config("127.0.0.1"), !noPinCpus);
    }
    spec = spec.withTls(tls.tls());
    LocalDeployment deployment = LocalDeployment.start(spec);
    Runtime.getRuntime().addShutdownHook(new Thread(deployment::close));
    System.out.println(
        "Tandem is serving " + deployment.model().name() + " at http://" + http.host + ":" + deployment.port() + "/v1 (Ctrl-C stops it)");
    deployment.frontend().awaitClose();
    return 0;
  }
}
