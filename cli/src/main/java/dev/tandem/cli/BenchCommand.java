package dev.tandem.cli;

import dev.tandem.bench.BenchConfig;
import dev.tandem.bench.BenchReport;
import dev.tandem.bench.LoadGenerator;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = "Load generator over the OpenAI streaming API: TTFT, ITL, end-to-end latency, throughput.")
final class BenchCommand implements Callable<Integer> {
  @Option(names = "--url", defaultValue = "http://127.0.0.1:8000", description = "Frontend base URL (default ${DEFAULT-VALUE}).")
  URI url;

  @Option(names = "--model", description = "Model name (default: the one /v1/models lists).")
  String model;

  @Option(names = "--endpoint", defaultValue = "completions", description = "completions (exact token-id prompts) or chat (default ${DEFAULT-VALUE}).")
  String endpoint;

  @Option(names = "--concurrency", defaultValue = "1", description = "Requests in flight at once (default ${DEFAULT-VALUE}).")
  int concurrency;

  @Option(names = "--request-rate", defaultValue = "0", description = "Poisson arrivals per second; overrides --concurrency when > 0.")
  double requestRate;

  @Option(names = "--num-requests", defaultValue = "100", description = "Requests to send (default ${DEFAULT-VALUE}).")
  int numRequests;

  @Option(names = "--input-tokens", defaultValue = "512", description = "Prompt length (default ${DEFAULT-VALUE}).")
  int inputTokens;

  @Option(names = "--output-tokens", defaultValue = "64", description = "Tokens generated per request, EOS ignored (default ${DEFAULT-VALUE}).")
  int outputTokens;

  @Option(names = "--prefixes", defaultValue = "0", description = "Shared-prefix workload: number of distinct prefixes (0: independent prompts).")
  int prefixes;

  @Option(names = "--prefix-repeats", defaultValue = "1", description = "Requests per prefix (default ${DEFAULT-VALUE}).")
  int prefixRepeats;

  @Option(names = "--prefix-tokens", defaultValue = "256", description = "Tokens in each shared prefix (default ${DEFAULT-VALUE}).")
  int prefixTokens;

  @Option(names = "--turns", defaultValue = "0", description = "Multi-turn workload: turns per conversation (--prefixes conversations, the first turn --prefix-tokens long, each later turn adding --input-tokens); 0: off.")
  int turns;

  @Option(names = "--long-tokens", defaultValue = "0", description = "Mixed workload: the length of the long prompts (with --long-share).")
  int longTokens;

  @Option(names = "--long-share", defaultValue = "0", description = "Mixed workload: the share of prompts that are --long-tokens long instead of --input-tokens (default ${DEFAULT-VALUE}).")
  double longShare;

  @Option(names = "--seed", defaultValue = "0", description = "Workload seed (default ${DEFAULT-VALUE}).")
  long seed;

  @Option(names = "--timeout-s", defaultValue = "600", description = "Per-request timeout in seconds (default ${DEFAULT-VALUE}).")
  long timeoutS;

  @Option(names = "--json", description = "Also write the report as JSON to this file.")
  Path json;

  @Option(names = "--api-key", defaultValue = "${env:TANDEM_API_KEY}",
      description = "Send this key as 'Authorization: Bearer' (a frontend started with --api-key needs one).")
  String apiKey;

  @Option(names = "--duration-s", defaultValue = "0",
      description = "Keep --concurrency requests in flight for this many seconds, cycling through the workload's prompts (default 0: send --num-requests once).")
  double durationS;

  @Override
  public Integer call() throws Exception {
    String firstKey = apiKey == null ? null : apiKey.split(",")[0].strip(); // TANDEM_API_KEY may list several
    BenchConfig config = config(model != null ? model : "", firstKey); // the flags checked before anything is sent
    if (model == null) {
      try {
        config = config(LoadGenerator.servedModel(url, firstKey), firstKey);
      } catch (java.net.ConnectException e) {
        throw new IllegalStateException("no frontend answers at " + url + ": start one (./tandem serve) or point --url at it");
      }
    }
    BenchReport report = new LoadGenerator(config).run();
    System.out.print(report.text());
    if (json != null) {
      Files.writeString(json, report.json());
    }
    return report.failures() == 0 ? 0 : 1;
  }

  private BenchConfig config(String servedModel, String firstKey) {
    BenchConfig.Builder builder =
        BenchConfig.builder(url, servedModel)
            .endpoint(endpoint)
            .concurrency(concurrency)
            .requestRate(requestRate)
            .numRequests(numRequests)
            .tokens(inputTokens, outputTokens)
            .mixed(longTokens, longShare)
            .seed(seed)
            .timeout(Duration.ofSeconds(timeoutS))
            .apiKey(firstKey)
            .duration(durationS);
    return turns > 0
        ? builder.multiTurn(prefixes, turns, prefixTokens, inputTokens).build()
        : builder.sharedPrefixes(prefixes, prefixRepeats, prefixTokens).build();
  }
}
