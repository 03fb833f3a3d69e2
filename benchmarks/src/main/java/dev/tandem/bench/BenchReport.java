package dev.tandem.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Percentiles and throughput of a run, as text and as JSON. Where the server reports timing, the
 * TTFT it adds over the worker's own is split in three: the frontend before the worker's call
 * ({@code dispatchMs}: parsing, tokenizing, routing), the call's round trip beyond the worker's own
 * TTFT ({@code hopMs}: gRPC both ways, the worker's entry and exit, the hand-back to the
 * connection's loop), and the client's side ({@code clientMs}: the HTTP exchange, loopback, the
 * load generator reading the event).
 */
public record BenchReport(
    BenchConfig config,
    int requests,
    int failures,
    List<String> sampleErrors,
    double durationS,
    long outputTokens,
    long promptTokens,
    long cachedTokens,
    Stats ttftMs,
    Stats itlMs,
    Stats e2eMs,
    Stats overheadMs,
    Stats serverOverheadMs,
    Stats dispatchMs,
    Stats hopMs,
    Stats clientMs,
    Stats ttftHitMs,
    Stats ttftMissMs,
    java.util.SortedMap<String, Integer> workerShare,
    long maxCachedTokens) {

  /** Mean and percentiles of one latency; NaN when there were no samples. */
  public record Stats(int count, double mean, double p50, double p90, double p99, double max) {
    static Stats of(List<Double> values) {
      double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
      if (v.length == 0) {
        return new Stats(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN);
      }
      return new Stats(v.length, Arrays.stream(v).average().orElseThrow(), pct(v, 50), pct(v, 90), pct(v, 99), v[v.length - 1]);
    }

    private static double pct(double[] sorted, double p) {
      double rank = p / 100 * (sorted.length - 1);
      int lo = (int) Math.floor(rank);
      int hi = (int) Math.ceil(rank);
      return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
    }
  }

  static BenchReport of(BenchConfig config, List<RequestResult> results, double durationS) {
    return of(config, results, durationS, 0);
  }

  /** {@code maxCachedTokens}: the prompt tokens a cache could have served at best (0: not computed). */
  static BenchReport of(BenchConfig config, List<RequestResult> results, double durationS, long maxCachedTokens) {
    List<Double> ttft = new ArrayList<>();
    List<Double> itl = new ArrayList<>();
    List<Double> e2e = new ArrayList<>();
    List<Double> overhead = new ArrayList<>();
    List<Double> serverOverhead = new ArrayList<>();
    List<Double> dispatch = new ArrayList<>();
    List<Double> hop = new ArrayList<>();
    List<Double> client = new ArrayList<>();
    List<Double> ttftHit = new ArrayList<>();
    List<Double> ttftMiss = new ArrayList<>();
    java.util.SortedMap<String, Integer> share = new java.util.TreeMap<>();
    List<String> errors = new ArrayList<>();
    long out = 0;
    long prompt = 0;
    long cached = 0;
    int failures = 0;
    for (RequestResult r : results) {
      if (!r.ok()) {
        failures++;
        if (errors.size() < 5) {
          errors.add(r.error());
        }
        continue;
      }
      r.workerIds().forEach(w -> share.merge(w, 1, Integer::sum));
      if (r.ttftMs() >= 0) {
        ttft.add(r.ttftMs());
        // A hit: at least half of the prompt came from a worker's prefix cache.
        (2L * r.cachedTokens() >= r.promptTokens() && r.promptTokens() > 0 ? ttftHit : ttftMiss).add(r.ttftMs());
        if (r.workerTtftMs() >= 0) {
          overhead.add(r.ttftMs() - r.workerTtftMs());
          if (r.serverTtftMs() >= 0) {
            serverOverhead.add(r.serverTtftMs() - r.workerTtftMs());
            client.add(r.ttftMs() - r.serverTtftMs());
            if (r.serverDispatchMs() >= 0) {
              dispatch.add(r.serverDispatchMs());
              hop.add(r.serverTtftMs() - r.serverDispatchMs() - r.workerTtftMs());
            }
          }
        }
      }
      itl.addAll(r.itlMs());
      e2e.add(r.e2eMs());
      out += r.outputTokens();
      prompt += r.promptTokens();
      cached += r.cachedTokens();
    }
    return new BenchReport(
        config, results.size(), failures, errors, durationS, out, prompt, cached,
        Stats.of(ttft), Stats.of(itl), Stats.of(e2e), Stats.of(overhead), Stats.of(serverOverhead),
        Stats.of(dispatch), Stats.of(hop), Stats.of(client),
        Stats.of(ttftHit), Stats.of(ttftMiss), share, maxCachedTokens);
  }

  public String text() {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "requests %d (failed %d) in %.2f s: %.2f req/s, %.1f output tok/s%n",
        requests, failures, durationS, (requests - failures) / durationS, outputTokens / durationS));
    sb.append(String.format(Locale.ROOT, "prompt tokens %d, cached %d (%.1f%%; at most %.1f%% could be)%n",
        promptTokens, cachedTokens, promptTokens == 0 ? 0.0 : 100.0 * cachedTokens / promptTokens,
        promptTokens == 0 ? 0.0 : 100.0 * maxCachedTokens / promptTokens));
    sb.append(String.format(Locale.ROOT, "%-30s %8s %8s %8s %8s %8s%n", "latency (ms)", "mean", "p50", "p90", "p99", "max"));
    line(sb, "TTFT", ttftMs);
    line(sb, "ITL", itlMs);
    line(sb, "end-to-end", e2eMs);
    line(sb, "TTFT - worker TTFT", overheadMs);
    line(sb, "frontend TTFT - worker", serverOverheadMs);
    if (dispatchMs.count() > 0) {
      line(sb, "  arrival -> call (frontend)", dispatchMs);
      line(sb, "  call -> token - worker TTFT", hopMs);
      line(sb, "  client TTFT - frontend TTFT", clientMs);
    }
    line(sb, "TTFT of hits (>= 50% cached)", ttftHitMs);
    line(sb, "TTFT of misses", ttftMissMs);
    sb.append("requests per worker: ").append(workerShare).append('\n');
    for (String e : sampleErrors) {
      sb.append("error: ").append(e).append('\n');
    }
    return sb.toString();
  }

  private static void line(StringBuilder sb, String name, Stats s) {
    sb.append(String.format(Locale.ROOT, "%-30s %8.3f %8.3f %8.3f %8.3f %8.3f%n", name, s.mean(), s.p50(), s.p90(), s.p99(), s.max()));
  }

  public String json() {
    ObjectMapper mapper = new ObjectMapper();
    ObjectNode root = mapper.createObjectNode();
    ObjectNode c = root.putObject("config");
    c.put("url", config.url().toString());
    c.put("model", config.model());
    c.put("endpoint", config.endpoint());
    c.put("concurrency", config.concurrency());
    c.put("request_rate", config.requestRate());
    c.put("requests", config.totalRequests());
    c.put("input_tokens", config.inputTokens());
    c.put("output_tokens", config.outputTokens());
    c.put("prefixes", config.prefixes());
    c.put("prefix_repeats", config.prefixRepeats());
    c.put("prefix_tokens", config.prefixTokens());
    c.put("seed", config.seed());
    root.put("requests", requests);
    root.put("failures", failures);
    root.put("duration_s", durationS);
    root.put("prompt_tokens", promptTokens);
    root.put("cached_tokens", cachedTokens);
    root.put("output_tokens", outputTokens);
    root.set("ttft_ms", mapper.valueToTree(ttftMs));
    root.set("itl_ms", mapper.valueToTree(itlMs));
    root.set("e2e_ms", mapper.valueToTree(e2eMs));
    root.set("overhead_ms", mapper.valueToTree(overheadMs));
    root.set("frontend_overhead_ms", mapper.valueToTree(serverOverheadMs));
    root.set("frontend_dispatch_ms", mapper.valueToTree(dispatchMs));
    root.set("call_hop_ms", mapper.valueToTree(hopMs));
    root.set("client_side_ms", mapper.valueToTree(clientMs));
    root.set("ttft_hit_ms", mapper.valueToTree(ttftHitMs));
    root.set("ttft_miss_ms", mapper.valueToTree(ttftMissMs));
    root.set("worker_share", mapper.valueToTree(workerShare));
    root.put("hit_rate", promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens);
    root.put("max_hit_rate", promptTokens == 0 ? 0 : (double) maxCachedTokens / promptTokens);
    root.set("sample_errors", mapper.valueToTree(sampleErrors));
    root.put("request_throughput", (requests - failures) / durationS);
    root.put("output_token_throughput", outputTokens / durationS);
    try {
      return mapper.writerWithDefaultPrettyPrinter().writeValueAsString(root);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
