package dev.tandem.planner.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.tandem.planner.Decision;
import dev.tandem.planner.Planner;
import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.Pool;
import dev.tandem.planner.PoolLimits;
import dev.tandem.planner.connect.Connector;
import dev.tandem.planner.connect.ConnectorException;
import dev.tandem.planner.connect.VirtualConnector;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The loop over a real HTTP /metrics endpoint (a stand-in frontend serving canned text). */
class PlannerLoopTest {
  @TempDir Path dir;
  HttpServer frontend;
  final AtomicReference<String> metrics = new AtomicReference<>("");
  final AtomicReference<String> key = new AtomicReference<>();

  @BeforeEach
  void serve() throws Exception {
    frontend = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    frontend.createContext("/metrics", ex -> {
      if (key.get() != null && !("Bearer " + key.get()).equals(ex.getRequestHeaders().getFirst("Authorization"))) {
        ex.sendResponseHeaders(401, -1);
        ex.close();
        return;
      }
      byte[] b = metrics.get().getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, b.length);
      ex.getResponseBody().write(b);
      ex.close();
    });
    frontend.start();
  }

  @AfterEach
  void stop() {
    frontend.stop(0);
  }

  private static String load(int finished, int running, int workers) {
    StringBuilder s = new StringBuilder("tandem_frontend_requests_total{endpoint=\"completions\",status=\"200\"} " + finished + "\n");
    for (int i = 0; i < workers; i++) {
      s.append("tandem_worker_reachable{role=\"decode\",worker=\"d").append(i).append("\"} 1.0\n");
      s.append("tandem_worker_active_requests{role=\"decode\",worker=\"d").append(i).append("\"} ").append(running / workers).append("\n");
    }
    return s.toString();
  }

  private PlannerLoop loop(Connector c, int maxDecode) {
    Planner planner = new Planner(PlannerConfig.builder().intervalSeconds(1).graceIntervals(0)
        .prefillLimits(new PoolLimits(0, 0)).decodeLimits(new PoolLimits(1, maxDecode)).build());
    URI url = URI.create("http://127.0.0.1:" + frontend.getAddress().getPort());
    return new PlannerLoop(planner, c, new PlannerLoop.Options(List.of(url), Duration.ofSeconds(1), false), new PlannerMetrics());
  }

  @Test
  void aBusyPoolGrowsWithinItsMaximumAndTheDecisionIsWrittenDown() throws Exception {
    Path file = dir.resolve("decisions.jsonl");
    try (PlannerLoop loop = loop(new VirtualConnector(file), 3)) {
      metrics.set(load(0, 0, 1));
      assertNull(loop.tick(), "the first scrape is the baseline");
      metrics.set(load(10, 200, 1)); // 200 running on one worker, its mark is 64
      Decision d = loop.tick();
      assertEquals(3, d.decode(), d.reason()); // wants 5, the maximum is 3
      List<String> lines = Files.readAllLines(file);
      assertTrue(lines.stream().anyMatch(l -> l.contains("\"pool\":\"decode\"") && l.contains("\"replicas\":3")), lines.toString());
    }
  }

  @Test
  void aFailingConnectorIsRetriedWithBackoffNotEveryInterval() throws Exception {
    List<Integer> attempts = new ArrayList<>();
    Connector failing = new Connector() {
      @Override public String name() { return "failing"; }
      @Override public int starting(Pool pool) { return 0; }
      @Override public void scale(Pool pool, int replicas, Collection<String> leastLoaded) throws ConnectorException {
        if (pool == Pool.DECODE) {
          attempts.add(replicas);
          throw new ConnectorException("403 forbidden");
        }
      }
    };
    try (PlannerLoop loop = loop(failing, 4)) {
      metrics.set(load(0, 0, 1));
      loop.tick();
      for (int i = 1; i <= 12; i++) {
        metrics.set(load(10 * i, 200, 1));
        loop.tick();
      }
      // Tries at ticks 1, 2, 4, 8 (backoff 1, 2, 4, 8 intervals), not 12 times.
      assertEquals(4, attempts.size(), "attempts " + attempts);
    }
  }

  @Test
  void theApiKeyIsSentWhenTheFrontendsMetricsNeedOne() throws Exception {
    key.set("sk-planner");
    Planner planner = new Planner(PlannerConfig.builder().intervalSeconds(1).prefillLimits(new PoolLimits(0, 0)).build());
    URI url = URI.create("http://127.0.0.1:" + frontend.getAddress().getPort());
    try (PlannerLoop without = new PlannerLoop(planner, new VirtualConnector(dir.resolve("a.jsonl")),
            new PlannerLoop.Options(List.of(url), Duration.ofSeconds(1), false), new PlannerMetrics());
        PlannerLoop with = new PlannerLoop(planner, new VirtualConnector(dir.resolve("b.jsonl")),
            new PlannerLoop.Options(List.of(url), Duration.ofSeconds(1), false, "sk-planner"), new PlannerMetrics())) {
      metrics.set(load(0, 0, 1));
      without.tick();
      with.tick();
      metrics.set(load(10, 0, 1));
      assertNull(without.tick(), "401: the interval is skipped");
      assertTrue(with.tick() != null, "with the key it decides");
    }
  }

  @Test
  void anUnreachableFrontendSkipsTheIntervalAndTheLogSaysWhereAndWhy() throws Exception {
    ch.qos.logback.classic.Logger logger = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(PlannerLoop.class);
    var said = new ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent>();
    said.start();
    logger.addAppender(said);
    try (PlannerLoop loop = loop(new VirtualConnector(dir.resolve("d.jsonl")), 3)) {
      int port = frontend.getAddress().getPort();
      frontend.stop(0);
      assertNull(loop.tick());
      assertNull(loop.tick());
      String warning = said.list.stream().map(e -> e.getFormattedMessage()).filter(m -> m.startsWith("cannot read")).findFirst().orElseThrow();
      assertEquals("cannot read the frontends' metrics: http://127.0.0.1:" + port
          + "/metrics: connection refused (is the frontend running there?); skipping this interval", warning);
    } finally {
      logger.detachAppender(said);
    }
  }

  @Test
  void aRequestWaitingWithNoGeneratingWorkerIsDecidedAtOnceNotAtTheIntervalsEnd() throws Exception {
    Path file = dir.resolve("zero.jsonl");
    Planner planner = new Planner(PlannerConfig.builder().intervalSeconds(3600).graceIntervals(0).idleIntervalsToZero(1)
        .prefillLimits(new PoolLimits(0, 0)).decodeLimits(new PoolLimits(0, 3)).build());
    URI url = URI.create("http://127.0.0.1:" + frontend.getAddress().getPort());
    // An hour between intervals: only the watch can act within this test.
    var options = new PlannerLoop.Options(List.of(url), Duration.ofHours(1), false, null, Duration.ofMillis(50));
    try (PlannerLoop loop = new PlannerLoop(planner, new VirtualConnector(file), options, new PlannerMetrics())) {
      metrics.set(load(0, 0, 1));
      assertNull(loop.tick(), "baseline");
      assertEquals(0, loop.tick().decode(), "nothing asked for: the pool goes to zero");
      assertNull(loop.watch(), "no one waiting: nothing to decide");
      loop.start(); // the next interval is an hour away
      metrics.set("tandem_frontend_waiting_requests 1.0\n");
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      List<String> lines = List.of();
      while (System.nanoTime() < deadline) {
        lines = Files.exists(file) ? Files.readAllLines(file) : List.of();
        if (lines.stream().anyMatch(l -> l.contains("\"pool\":\"decode\"") && l.contains("\"replicas\":1"))) {
          break;
        }
        Thread.sleep(20);
      }
      assertTrue(lines.stream().anyMatch(l -> l.contains("\"pool\":\"decode\"") && l.contains("\"replicas\":1")),
          "a decode worker asked for within the watch, not the hour: " + lines);
    }
  }
}
