package dev.tandem.cli;

import dev.tandem.router.BlockCost;
import dev.tandem.router.KvCost;
import dev.tandem.router.KvSelector;
import dev.tandem.router.PredictedTtftCost;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.grpc.Router;
import java.time.Duration;
import picocli.CommandLine.Option;

/** How the router picks workers; shared by {@code serve} and {@code frontend}. */
final class RouterOptions {
  @Option(names = "--router-mode", defaultValue = "${env:TANDEM_ROUTER_MODE:-kv}", description = "kv (prefix-cache aware), round-robin or random (default ${DEFAULT-VALUE}).")
  String mode;

  @Option(names = "--router-temperature", defaultValue = "${env:TANDEM_ROUTER_TEMPERATURE:-0}", description = "0 picks the cheapest worker; T > 0 samples by cost (default ${DEFAULT-VALUE}).")
  double temperature;

  @Option(names = "--router-cost", defaultValue = "${env:TANDEM_ROUTER_COST:-seconds}",
      description = "kv mode's cost: seconds (each worker's predicted time to first token from its measured prefill speed, queue and decode load) or blocks (Dynamo's block cost, weighed by --prefill-load-scale and --active-request-weight); default ${DEFAULT-VALUE}.")
  String cost;

  @Option(names = "--itl-target-ms", defaultValue = "${env:TANDEM_ITL_TARGET_MS:-0}",
      description = "seconds cost: avoid prefilling beside decoding streams when that step would exceed this inter-token latency (0: no target; default ${DEFAULT-VALUE}).")
  double itlTargetMs;

  @Option(names = "--eviction-weight", defaultValue = "${env:TANDEM_EVICTION_WEIGHT:-0.5}",
      description = "seconds cost: the share of an evicted prefix block's recompute a placement pays (default ${DEFAULT-VALUE}).")
  double evictionWeight;

  @Option(names = "--prefill-load-scale", defaultValue = "${env:TANDEM_PREFILL_LOAD_SCALE:-1.0}", description = "blocks cost: weight of uncached prefill blocks (default ${DEFAULT-VALUE}).")
  double prefillLoadScale;

  @Option(names = "--active-request-weight", defaultValue = "${env:TANDEM_ACTIVE_REQUEST_WEIGHT:-1.0}", description = "blocks cost: weight of in-flight requests (default ${DEFAULT-VALUE}).")
  double activeRequestWeight;

  @Option(names = "--no-kv-events", description = "Route by what the router sent where (TTL 120 s) instead of workers' KV events.")
  boolean noKvEvents;

  @Option(names = "--missing-events-window-s", defaultValue = "${env:TANDEM_MISSING_EVENTS_WINDOW_S:-10}", description = "A worker sent new blocks that publishes no KV events for this long is flagged and routed approximately (default ${DEFAULT-VALUE}).")
  long missingEventsWindowS;

  @Option(names = "--disagg", defaultValue = "${env:TANDEM_DISAGG:-auto}", description = "With prefill workers registered: auto (split a request when the cost model says it pays), always, or never (default ${DEFAULT-VALUE}).")
  String disagg;

  @Option(names = "--decode-stall-weight", defaultValue = "${env:TANDEM_DECODE_STALL_WEIGHT:-1.0}", description = "auto split: how much one second of stall to one decoding stream counts against one second of the new request's time to first token (default ${DEFAULT-VALUE}).")
  double decodeStallWeight;

  Router.Config config() {
    Flags.nonNegative("--router-temperature", temperature);
    Flags.nonNegative("--itl-target-ms", itlTargetMs);
    Flags.nonNegative("--eviction-weight", evictionWeight);
    Flags.nonNegative("--prefill-load-scale", prefillLoadScale);
    Flags.nonNegative("--active-request-weight", activeRequestWeight);
    Flags.atLeast("--missing-events-window-s", missingEventsWindowS, 0);
    Flags.nonNegative("--decode-stall-weight", decodeStallWeight);
    KvCost kvCost =
        switch (cost) {
          case "seconds" -> new PredictedTtftCost(itlTargetMs / 1e3, evictionWeight);
          case "blocks" -> new BlockCost(prefillLoadScale, activeRequestWeight);
          default -> throw new IllegalArgumentException("--router-cost: unknown cost '" + cost + "'; expected seconds or blocks");
        };
    return new Router.Config(
        dev.tandem.router.RouterMode.parse(mode),
        new KvSelector.Weights(prefillLoadScale, activeRequestWeight, temperature),
        !noKvEvents,
        Duration.ofSeconds(missingEventsWindowS),
        new SplitPolicy(SplitPolicy.Mode.parse(disagg), decodeStallWeight),
        kvCost);
  }
}
