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
      BenchReport fixed = new LoadGenerator(BenchConfig.builder(url, model)
          .endpoint("completions").concurrency(4).numRequests(40).tokens(64, 8).seed(1).timeout(Duration.ofSeconds(30)).build()).run();
      assertEquals(0, fixed.failures(), fixed.text());
      assertEquals(40 * 8, fixed.outputTokens());
      assertEquals(40, fixed.ttftMs().count());
      // 7 gaps per request, fewer where a token held only part of a character (no text of its own).
      assertTrue(fixed.itlMs().count() > 40 * 5 && fixed.itlMs().count() <= 40 * 7, fixed.text());
      assertTrue(fixed.overheadMs().p50() > 0);

      // Poisson arrivals (overlapping requests): every one measured.
      BenchReport poisson = new LoadGenerator(BenchConfig.builder(url, model)
          .endpoint("chat").concurrency(0).requestRate(200).numRequests(20).tokens(96, 4).seed(3).timeout(Duration.ofSeconds(30)).build()).run();
      assertEquals(0, poisson.failures(), poisson.text());
      assertEquals(20, poisson.ttftMs().count());

      // Shared prefixes one at a time, so each family's first request has stored its blocks.
      BenchReport prefixes = new LoadGenerator(BenchConfig.builder(url, model)
          .endpoint("chat").concurrency(1).numRequests(0).tokens(96, 4).sharedPrefixes(3, 4, 64).seed(2).timeout(Duration.ofSeconds(30)).build()).run();
      assertEquals(0, prefixes.failures(), prefixes.text());
      assertEquals(12, prefixes.requests());
      // One worker: after each prefix's first request, its 64-token prefix (4 blocks) is cached.
      assertTrue(prefixes.cachedTokens() >= 9 * 48L, prefixes.text());
      TestDeployments.assertPoolsFull(d);
    }
  }

  @Test
  void sendsTheApiKeyAFrontendAsksFor() throws Exception {
    var keys = dev.tandem.frontend.http.ApiKeys.of(java.util.List.of("sk-bench"));
    var admission = new dev.tandem.frontend.http.Admission(keys, false, 0, 0, Duration.ofSeconds(60), Duration.ofSeconds(300), false);
    var mocker = dev.tandem.engine.mocker.MockerConfig.defaults().withTiming(TimingModel.noDelay()).withPool(2048, 16);
    try (LocalDeployment d = LocalDeployment.start(LocalDeployment.Spec.mocker(1, mocker, dev.tandem.engine.ModelFiles.bundledQwen3(),
        dev.tandem.router.grpc.Router.Config.of("round-robin"),
        new dev.tandem.frontend.http.FrontendServer.Config("127.0.0.1", 0, 1 << 20, Duration.ZERO, admission)))) {
      URI url = URI.create("http://127.0.0.1:" + d.port());
      org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, () -> LoadGenerator.servedModel(url), "401 without the key");
      String model = LoadGenerator.servedModel(url, "sk-bench");
      BenchConfig.Builder run = BenchConfig.builder(url, model).concurrency(2).numRequests(6).tokens(32, 4).timeout(Duration.ofSeconds(30));
      assertEquals(6, new LoadGenerator(run.build()).run().failures(), "without the key every request is refused");
      BenchReport keyed = new LoadGenerator(run.apiKey("sk-bench").build()).run();
      assertEquals(0, keyed.failures(), keyed.text());
      assertEquals(6 * 4, keyed.outputTokens());
    }
  }
}
