package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.common.WorkerId;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.router.Route;
import dev.tandem.router.TokenListener;
import dev.tandem.router.KvSelector;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerPool;
import dev.tandem.worker.WorkerServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** KV-aware routing over real workers: prefix affinity, snapshots for a new router, missing events. */
@org.junit.jupiter.api.Tag("e2e")
class KvRoutingTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static String ids(int n, int salt) {
    return IntStream.range(0, n).mapToObj(i -> Integer.toString(1000 + salt * 997 + i)).collect(Collectors.joining(","));
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
      Thread.sleep(20);
    }
  }

  /**
   * At the mocker's real-time timing: the default cost prices a placement in predicted seconds, so
   * a cache hit wins by the prefill time it saves. Without delay that saving is near nothing, and
   * where the other terms put two workers within the 5% tie tolerance the router breaks the tie
   * toward the worker it sent fewer blocks (the likely cause of this test failing once in CI, run
   * without delay; not reproduced in six runs here).
   */
  @Test
  void requestsSharingAPrefixLandOnTheWorkerThatCachesIt() throws Exception {
    try (LocalDeployment d = TestDeployments.start(2, TimingModel.realTime(), 1 << 20, Router.Config.of("kv"))) {
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      URI url = URI.create("http://127.0.0.1:" + d.port() + "/v1/completions");
      for (int family = 0; family < 3; family++) {
        Set<String> workers = new HashSet<>();
        int cachedAfterFirst = Integer.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
          String prompt = "[" + ids(256, family) + "," + ids(8, 100 + family * 10 + i) + "]";
          String body = """
              {"model": "%s", "prompt": %s, "max_tokens": 2, "tandem": {"timing": true}}""".formatted(TestDeployments.MODEL, prompt);
          JsonNode r = JSON.readTree(http.send(HttpRequest.newBuilder(url).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
              HttpResponse.BodyHandlers.ofString()).body());
          workers.add(r.at("/tandem/worker_ids/0").asText());
          if (i > 0) {
            cachedAfterFirst = Math.min(cachedAfterFirst, r.at("/usage/prompt_tokens_details/cached_tokens").asInt());
          }
          if (i == 0) {
            // The family's 16 prefix blocks reach the router's index as stored events.
            int expected = 16 * (family + 1);
            await(() -> d.router().kv().orElseThrow().index().blockCount() >= expected, "stored events");
          }
        }
        assertEquals(1, workers.size(), "family " + family + " went to " + workers);
        assertEquals(256, cachedAfterFirst, "the shared 256-token prefix is served from cache");
      }
      String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + d.port() + "/metrics")).build(),
          HttpResponse.BodyHandlers.ofString()).body();
      assertTrue(metrics.contains("tandem_router_kv_hit_rate"), "hit-rate metric");
      assertTrue(metrics.contains("tandem_router_kv_events_applied_total"), "events metric");
    }
  }

  private static GenerationRequest request(String id, int prefixSalt, int n) {
    int[] prompt = IntStream.range(0, n).map(i -> 5000 + prefixSalt * 1000 + i).toArray();
    return new GenerationRequest(id, prompt, SamplingParams.greedy(), StopConditions.maxTokens(1));
  }

  private static void run(Route routed, GenerationRequest request) throws Exception {
    CompletableFuture<Void> done = new CompletableFuture<>();
    routed.start(new TokenListener() {
      public void onChunk(TokenChunk chunk) {}
      public void onError(GenerationException error) { done.completeExceptionally(error); }
      public void onCompleted() { done.complete(null); }
    });
    done.get(10, TimeUnit.SECONDS);
  }

  @Test
  void aNewRouterRebuildsItsIndexFromSnapshots() throws Exception {
    MockerConfig mocker = MockerConfig.defaults().withTiming(TimingModel.noDelay()).withPool(512, 16);
    try (WorkerServer w = WorkerServer.start(WorkerServer.Config.local(new WorkerId("snap")), new MockerEngine(mocker));
        WorkerPool pool = new WorkerPool(16, Duration.ofSeconds(10), Duration.ofMillis(200))) {
      pool.add(w.address());
      try (Router first = Router.create(pool, Router.Config.of("kv"))) {
        run(first.route(request("a", 1, 160), null), request("a", 1, 160));
        await(() -> first.kv().orElseThrow().index().blockCount() == 10, "10 blocks in the first router");
      }
      try (Router second = Router.create(pool, Router.Config.of("kv"))) {
        await(() -> second.kv().orElseThrow().index().blockCount() == 10, "10 blocks from the snapshot");
        assertTrue(second.kv().orElseThrow().eventSnapshots() >= 1);
        Route b = second.route(request("b", 1, 160), null);
        b.release();
        assertEquals(10, b.predictedOverlapBlocks());
      }
    }
  }

  @Test
  void routerReplicasConsumeAllEventsAndAgree() throws Exception {
    MockerConfig mocker = MockerConfig.defaults().withTiming(TimingModel.noDelay()).withPool(512, 16);
    try (WorkerServer w0 = WorkerServer.start(WorkerServer.Config.local(new WorkerId("r0")), new MockerEngine(mocker));
        WorkerServer w1 = WorkerServer.start(WorkerServer.Config.local(new WorkerId("r1")), new MockerEngine(mocker));
        WorkerPool poolA = new WorkerPool(16, Duration.ofSeconds(10), Duration.ofMillis(200));
        WorkerPool poolB = new WorkerPool(16, Duration.ofSeconds(10), Duration.ofMillis(200))) {
      for (WorkerPool p : List.of(poolA, poolB)) {
        p.add(w0.address());
        p.add(w1.address());
      }
      try (Router a = Router.create(poolA, Router.Config.of("kv"));
          Router b = Router.create(poolB, Router.Config.of("kv"))) {
        // Traffic only through replica A; replica B learns the same cache from the events.
        for (int family = 0; family < 4; family++) {
          GenerationRequest req = request("f" + family, 10 + family, 96);
          run(a.route(req, family % 2 == 0 ? "r0" : "r1"), req);
        }
        await(() -> a.kv().orElseThrow().index().blockCount() == 24 && b.kv().orElseThrow().index().blockCount() == 24,
            "both replicas index all 24 blocks");
        for (int family = 0; family < 4; family++) {
          GenerationRequest req = request("g" + family, 10 + family, 96);
          Route ra = a.route(req, null);
          Route rb = b.route(req, null);
          ra.release();
          rb.release();
          assertEquals(ra.worker(), rb.worker(), "replicas agree on family " + family);
          assertEquals(family % 2 == 0 ? "r0" : "r1", rb.worker().value());
          assertEquals(6, rb.predictedOverlapBlocks());
        }
      }
    }
  }

  @Test
  void aWorkerThatPublishesNoEventsIsFlaggedAndRoutedApproximately() throws Exception {
    MockerConfig mocker = MockerConfig.defaults().withTiming(TimingModel.noDelay()).withPool(512, 16);
    try (WorkerServer silent = WorkerServer.start(WorkerServer.Config.local(new WorkerId("silent")).withKvEvents(false), new MockerEngine(mocker));
        WorkerServer talking = WorkerServer.start(WorkerServer.Config.local(new WorkerId("talking")), new MockerEngine(mocker));
        WorkerPool pool = new WorkerPool(16, Duration.ofSeconds(10), Duration.ofMillis(200))) {
      pool.add(silent.address());
      pool.add(talking.address());
      var config = new Router.Config(dev.tandem.router.RouterMode.KV, KvSelector.Weights.defaults(), true, Duration.ofMillis(500));
      try (Router router = Router.create(pool, config)) {
        var kv = router.kv().orElseThrow();
        run(router.route(request("t", 2, 160), "talking"), request("t", 2, 160));
        run(router.route(request("s", 3, 160), "silent"), request("s", 3, 160));
        await(() -> kv.workersWithoutEvents().equals(Set.of(new WorkerId("silent"))), "the silent worker flagged");
        assertTrue(kv.scoredApproximately(new WorkerId("silent")));
        // Its prefix is known from routing alone, so the family still goes there.
        Route again = router.route(request("s2", 3, 160), null);
        again.release();
        assertEquals("silent", again.worker().value());
        assertEquals(10, again.predictedOverlapBlocks());
        assertEquals(List.of(), List.copyOf(kv.workersWithoutEvents().stream().filter(x -> x.value().equals("talking")).toList()));

        // The frontend shows it: /health degraded, naming the worker; a metric per worker.
        var model = LocalDeployment.servedModel(pool, Duration.ofSeconds(10), null);
        try (var frontend = dev.tandem.frontend.http.FrontendServer.start(
            new dev.tandem.frontend.http.FrontendServer.Config("127.0.0.1", 0, 1 << 20), model, router,
            LocalDeployment.metrics(router))) {
          HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
          URI base = URI.create("http://127.0.0.1:" + frontend.port());
          HttpResponse<String> health = http.send(HttpRequest.newBuilder(base.resolve("/health")).build(), HttpResponse.BodyHandlers.ofString());
          assertEquals(200, health.statusCode());
          JsonNode h = JSON.readTree(health.body());
          assertEquals("degraded", h.get("status").asText());
          assertEquals("silent", h.at("/degraded_workers/0/id").asText());
          assertTrue(h.at("/degraded_workers/0/reason").asText().contains("no KV events"));
          String metrics = http.send(HttpRequest.newBuilder(base.resolve("/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
          assertTrue(metrics.contains("tandem_router_worker_missing_kv_events{role=\"agg\",worker=\"silent\"} 1.0"), "missing-events metric");
          assertTrue(metrics.contains("tandem_router_worker_missing_kv_events{role=\"agg\",worker=\"talking\"} 0.0"), "missing-events metric");
        } finally {
          model.tokenizer().close();
        }
      }
    }
  }
}
