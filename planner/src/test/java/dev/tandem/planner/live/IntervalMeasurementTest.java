package dev.tandem.planner.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.planner.IntervalStats;
import dev.tandem.planner.Pool;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** Two scrapes of a frontend's metrics become one interval's measurements. */
class IntervalMeasurementTest {
  private static String scrape(double finished, double inflight, double prompt, double cached, double output, double[] ttftBuckets) {
    StringBuilder s = new StringBuilder();
    s.append("# HELP tandem_frontend_requests_total requests\n# TYPE tandem_frontend_requests_total counter\n");
    s.append("tandem_frontend_requests_total{endpoint=\"completions\",status=\"200\"} ").append(finished).append('\n');
    s.append("tandem_frontend_requests_total{endpoint=\"models\",status=\"200\"} 99.0\n");
    s.append("tandem_frontend_inflight_requests ").append(inflight).append('\n');
    s.append("tandem_frontend_waiting_requests 2.0\n");
    s.append("tandem_frontend_input_tokens_total ").append(prompt).append('\n');
    s.append("tandem_frontend_cached_tokens_total ").append(cached).append('\n');
    s.append("tandem_frontend_output_tokens_total ").append(output).append('\n');
    String[] le = {"0.1", "0.5", "1.0", "+Inf"};
    for (int i = 0; i < le.length; i++) {
      s.append("tandem_frontend_time_to_first_token_seconds_bucket{le=\"").append(le[i]).append("\"} ").append(ttftBuckets[i]).append('\n');
    }
    s.append("tandem_worker_active_requests{role=\"decode\",worker=\"d0\"} 3.0\n");
    s.append("tandem_worker_waiting_requests{role=\"decode\",worker=\"d0\"} 1.0\n");
    s.append("tandem_worker_kv_blocks_used{role=\"decode\",worker=\"d0\"} 50.0\n");
    s.append("tandem_worker_kv_blocks_capacity{role=\"decode\",worker=\"d0\"} 100.0\n");
    s.append("tandem_worker_reachable{role=\"decode\",worker=\"d0\"} 1.0\n");
    s.append("tandem_worker_draining{role=\"decode\",worker=\"d0\"} 0.0\n");
    s.append("tandem_worker_queued_prefill_tokens{role=\"prefill\",worker=\"p0\"} 4096.0\n");
    s.append("tandem_worker_reachable{role=\"prefill\",worker=\"p0\"} 1.0\n");
    s.append("tandem_worker_draining{role=\"prefill\",worker=\"p0\"} 1.0\n");
    return s.toString();
  }

  @Test
  void countersBecomeRatesLengthsAndAP90() {
    FrontendSnapshot a = FrontendSnapshot.of(List.of(PrometheusText.parse(scrape(100, 5, 50_000, 10_000, 5_000, new double[] {10, 90, 100, 100}))));
    FrontendSnapshot b = FrontendSnapshot.of(List.of(PrometheusText.parse(scrape(200, 8, 150_000, 40_000, 10_000, new double[] {20, 110, 200, 200}))));
    IntervalStats s = IntervalMeasurement.between(a, b, 10, Map.of(Pool.DECODE, 1));
    assertEquals(103, s.requests(), 1e-9, "100 finished + 3 more in flight");
    assertEquals(10.3, s.requestRate(), 1e-9);
    assertEquals(1000, s.meanIsl(), 1e-9);
    assertEquals(50, s.meanOsl(), 1e-9);
    assertEquals(0.3, s.prefixHitRate(), 1e-9);
    // 100 new TTFTs: 10 under 0.1 s, 10 in (0.1, 0.5], 80 in (0.5, 1.0]: the 90th is 7/8 into the last bucket.
    assertEquals(0.5 + 0.5 * (70.0 / 80), s.ttftP90Seconds(), 1e-9);
    assertTrue(Double.isNaN(s.itlP90Seconds()), "no ITL histogram, no figure");
    assertEquals(2, s.waitingRequests());
    assertEquals(1, s.decode().ready());
    assertEquals(1, s.decode().starting());
    assertEquals(0.5, s.decode().kvUsage(), 1e-9);
    assertEquals(4, s.decode().activeRequests(), 1e-9);
    assertEquals(0, s.prefill().ready(), "a draining worker does not serve");
    assertEquals(4096, s.prefill().queuedPrefillTokens(), 1e-9);
  }

  @Test
  void twoFrontendsAddUpAndAWorkerBothSeeCountsOnce() {
    List<PrometheusText.Sample> one = PrometheusText.parse(scrape(100, 5, 50_000, 0, 5_000, new double[] {1, 1, 1, 1}));
    FrontendSnapshot both = FrontendSnapshot.of(List.of(one, one));
    assertEquals(200, both.finished());
    assertEquals(1, both.workers().values().stream().filter(w -> w.pool() == Pool.DECODE).count());
  }

  @Test
  void quantileOfNothingIsNaN() {
    TreeMap<Double, Double> h = new TreeMap<>(Map.of(0.1, 5.0, Double.POSITIVE_INFINITY, 5.0));
    assertTrue(Double.isNaN(IntervalMeasurement.quantile(h, h, 0.9)));
  }

  @Test
  void labelsWithEscapesParse() {
    var s = PrometheusText.parse("m{a=\"x\\\"y\",b=\"z\"} 3.5\nbad line\nn 1e3\n");
    assertEquals(2, s.size());
    assertEquals("x\"y", s.get(0).label("a"));
    assertEquals(1000, s.get(1).value());
  }
}
