package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.bench.BenchConfig;
import dev.tandem.bench.BenchReport;
import dev.tandem.bench.LoadGenerator;
import dev.tandem.engine.mocker.TimingModel;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** `tandem bench` against a running stack: every request measured, prefix hits visible. */
@org.junit.jupiter.api.Tag("e2e")
class BenchEndToEndTest {
  @Test
  void measuresEveryRequestAndSeesSharedPrefixHits() throws Exception {
    try (LocalDeployment d = TestDeployments.start(1, TimingModel.noDelay(), 1 << 20)) {
      URI url = URI.create("http://127.0.0.1:" + d.port());
      String model = LoadGenerator.servedModel(url);
      assertEquals(TestDeployments.MODEL, model);
      BenchReport fixed = new LoadGenerator(new BenchConfig(
          url, model, "completions", 4, 0, 40, 64, 8, 0, 0, 0, 1, Duration.ofSeconds(30))).run();
      assertEquals(0, fixed.failures(), fixed.text());
      assertEquals(40 * 8, fixed.outputTokens());
      assertEquals(40, fixed.ttftMs().count());
      // 7 gaps per request, fewer where a token held only part of a character (no text of its own).
      assertTrue(fixed.itlMs().count() > 40 * 5 && fixed.itlMs().count() <= 40 * 7, fixed.text());
      assertTrue(fixed.overheadMs().p50() > 0);

      // Poisson arrivals (overlapping requests): every one measured.
      BenchReport poisson = new LoadGenerator(new BenchConfig(
          url, model, "chat", 0, 200, 20, 96, 4, 0, 0, 0, 3, Duration.ofSeconds(30))).run();
      assertEquals(0, poisson.failures(), poisson.text());
      assertEquals(20, poisson.ttftMs().count());

      // Shared prefixes one at a time, so each family's first request has stored its blocks.
      BenchReport prefixes = new LoadGenerator(new BenchConfig(
          url, model, "chat", 1, 0, 0, 96, 4, 3, 4, 64, 2, Duration.ofSeconds(30))).run();
      assertEquals(0, prefixes.failures(), prefixes.text());
      assertEquals(12, prefixes.requests());
      // One worker: after each prefix's first request, its 64-token prefix (4 blocks) is cached.
      assertTrue(prefixes.cachedTokens() >= 9 * 48L, prefixes.text());
      TestDeployments.assertPoolsFull(d);
    }
  }
}
