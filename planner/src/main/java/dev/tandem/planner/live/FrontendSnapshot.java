package dev.tandem.planner.live;

import dev.tandem.planner.Pool;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one scrape of the frontends' {@code /metrics} says: the counters the planner differences
 * (requests finished, prompt, cached and output tokens, TTFT and ITL histograms), the in-flight and
 * waiting gauges, and each worker the routers see (role, reachable, draining, running and waiting
 * requests, queued prompt tokens, KV use). Several frontends add up; a worker several routers see
 * counts once.
 */
public record FrontendSnapshot(
    double finished,
    double promptTokens,
    double cachedTokens,
    double outputTokens,
    double inflight,
    double waiting,
    TreeMap<Double, Double> ttftBuckets,
    TreeMap<Double, Double> itlBuckets,
    TreeMap<Double, Double> uncachedPromptBuckets,
    Map<String, WorkerView> workers) {

  /** One worker as the routers see it. */
  public record WorkerView(String id, Pool pool, boolean serving, double active, double waiting, double queuedTokens,
      double kvUsed, double kvTotal) {}

  public static final FrontendSnapshot EMPTY =
      new FrontendSnapshot(0, 0, 0, 0, 0, 0, new TreeMap<>(), new TreeMap<>(), new TreeMap<>(), Map.of());

  /** Adds up the samples of every frontend's scrape. */
  public static FrontendSnapshot of(List<List<PrometheusText.Sample>> scrapes) {
    double finished = 0, prompt = 0, cached = 0, output = 0, inflight = 0, waiting = 0;
    TreeMap<Double, Double> ttft = new TreeMap<>(), itl = new TreeMap<>(), uncached = new TreeMap<>();
    Map<String, Map<String, Double>> byWorker = new HashMap<>();
    Map<String, String> roles = new HashMap<>();
    for (List<PrometheusText.Sample> scrape : scrapes) {
      for (PrometheusText.Sample s : scrape) {
        switch (s.name()) {
          case "tandem_frontend_requests_total" -> {
            String endpoint = s.label("endpoint");
            if (endpoint.equals("chat_completions") || endpoint.equals("completions")) {
              finished += s.value();
            }
          }
          case "tandem_frontend_input_tokens_total" -> prompt += s.value();
          case "tandem_frontend_cached_tokens_total" -> cached += s.value();
          case "tandem_frontend_output_tokens_total" -> output += s.value();
          case "tandem_frontend_inflight_requests" -> inflight += s.value();
          case "tandem_frontend_waiting_requests" -> waiting += s.value();
          case "tandem_frontend_time_to_first_token_seconds_bucket" -> ttft.merge(le(s), s.value(), Double::sum);
          case "tandem_frontend_inter_token_latency_seconds_bucket" -> itl.merge(le(s), s.value(), Double::sum);
          case "tandem_frontend_uncached_prompt_tokens_bucket" -> uncached.merge(le(s), s.value(), Double::sum);
          default -> {
            if (s.name().startsWith("tandem_worker_") && !s.label("worker").isEmpty() && !s.label("role").isEmpty()) {
              roles.put(s.label("worker"), s.label("role"));
              // several routers see the same worker: keep the largest figure
              byWorker.computeIfAbsent(s.label("worker"), w -> new HashMap<>()).merge(s.name(), s.value(), Math::max);
            }
          }
        }
      }
    }
    Map<String, WorkerView> workers = new TreeMap<>();
    for (var e : byWorker.entrySet()) {
      Map<String, Double> m = e.getValue();
      String role = roles.get(e.getKey());
      Pool pool = role.equals("prefill") ? Pool.PREFILL : Pool.DECODE; // decode and aggregated workers generate
      boolean serving = m.getOrDefault("tandem_worker_reachable", 0.0) > 0 && m.getOrDefault("tandem_worker_draining", 0.0) == 0;
      workers.put(e.getKey(), new WorkerView(e.getKey(), pool, serving, m.getOrDefault("tandem_worker_active_requests", 0.0),
          m.getOrDefault("tandem_worker_waiting_requests", 0.0), m.getOrDefault("tandem_worker_queued_prefill_tokens", 0.0),
          m.getOrDefault("tandem_worker_kv_blocks_used", 0.0), m.getOrDefault("tandem_worker_kv_blocks_capacity", 0.0)));
    }
    return new FrontendSnapshot(finished, prompt, cached, output, inflight, waiting, ttft, itl, uncached, workers);
  }

  private static double le(PrometheusText.Sample s) {
    String le = s.label("le");
    return le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
  }
}
