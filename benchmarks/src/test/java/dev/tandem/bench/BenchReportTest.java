package dev.tandem.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class BenchReportTest {
  private static BenchConfig config(int prefixes) {
    return BenchConfig.builder(URI.create("http://x"), "m")
        .concurrency(4).numRequests(10).tokens(32, 8).sharedPrefixes(prefixes, 3, 16).seed(1).timeout(Duration.ofSeconds(5)).build();
  }

  @Test
  void percentilesInterpolateAndFailuresAreCounted() {
    List<RequestResult> results = new java.util.ArrayList<>();
    for (int i = 1; i <= 101; i++) {
      results.add(new RequestResult(true, null, i, List.of(1.0), i + 10, 8, 32, 16, i - 0.5, i - 0.25, 0.1, List.of("w")));
    }
    results.add(RequestResult.failed("HTTP 503", 1));
    BenchReport r = BenchReport.of(config(0), results, 2.0);
    assertEquals(1, r.failures());
    assertEquals(51, r.ttftMs().p50(), 1e-9);
    assertEquals(100, r.ttftMs().p99(), 1e-9);
    assertEquals(0.5, r.overheadMs().p50(), 1e-9);
    assertEquals(0.25, r.serverOverheadMs().p50(), 1e-9);
    // the frontend's 0.25 ms split into 0.1 before the call and 0.15 in it; the client's 0.25 beside it
    assertEquals(0.1, r.dispatchMs().p50(), 1e-9);
    assertEquals(0.15, r.hopMs().p50(), 1e-9);
    assertEquals(0.25, r.clientMs().p50(), 1e-9);
    assertEquals(808, r.outputTokens());
  }

  @Test
  void jsonCarriesConfigAndStats() throws Exception {
    BenchReport r = BenchReport.of(config(0), List.of(new RequestResult(true, null, 5, List.of(), 9, 8, 32, 0, 4, 4.5, 0.2, List.of())), 1.0);
    JsonNode json = new ObjectMapper().readTree(r.json());
    assertEquals(4, json.at("/config/concurrency").asInt());
    assertEquals(5.0, json.at("/ttft_ms/p50").asDouble());
    assertEquals(1.0, json.at("/overhead_ms/p50").asDouble());
  }

  @Test
  void sharedPrefixWorkloadRepeatsEachPrefixShuffled() {
    List<int[]> prompts = Workload.prompts(config(4));
    assertEquals(12, prompts.size());
    Map<Integer, Long> byFirstToken = prompts.stream()
        .collect(Collectors.groupingBy(p -> p[0], Collectors.counting()));
    assertEquals(4, byFirstToken.size());
    byFirstToken.values().forEach(n -> assertEquals(3L, n));
    assertTrue(prompts.stream().allMatch(p -> p.length == 32));
    boolean grouped = true;
    for (int i = 0; i < 12; i += 3) {
      grouped &= prompts.get(i)[0] == prompts.get(i + 1)[0] && prompts.get(i)[0] == prompts.get(i + 2)[0];
    }
    assertTrue(!grouped, "requests are shuffled, not grouped by prefix");
    assertEquals(prompts.stream().map(p -> p[0]).toList(),
        Workload.prompts(config(4)).stream().map(p -> p[0]).map(Function.identity()).toList(), "same seed, same workload");
  }
}
