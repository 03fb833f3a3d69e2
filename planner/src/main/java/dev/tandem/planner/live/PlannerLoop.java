package dev.tandem.planner.live;

import dev.tandem.planner.Decision;
import dev.tandem.planner.IntervalStats;
import dev.tandem.planner.Planner;
import dev.tandem.planner.Pool;
import dev.tandem.planner.connect.Connector;
import dev.tandem.planner.connect.ConnectorException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The planner as a running role: every interval it scrapes the frontends' {@code /metrics},
 * measures the interval, asks the {@link Planner}, logs the decision with its inputs, records it
 * in {@link PlannerMetrics}, and — unless advisory — has the {@link Connector} apply it. A failed
 * scrape skips the interval; a failed scaling action is retried after 1, 2, 4, 8 intervals (never
 * a tight loop), counted and logged. While the last decision left no generating worker (a pool
 * scaled to zero), it also looks every {@code zeroWatch} for a request waiting at a frontend, and
 * decides at once when one is there rather than at the interval's end ({@link #watch}).
 *
 * <p>Threading: one scheduler thread runs every tick; the planner and the connector are touched
 * only there (and the connector's close).
 */
public final class PlannerLoop implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PlannerLoop.class);

  /**
   * The frontends to read, the interval, whether to act, and the API key to send when the
   * frontends' {@code /metrics} need one (null: none).
   */
  public record Options(List<URI> frontends, Duration interval, boolean advisory, String apiKey, Duration zeroWatch) {
    /** How often a planner with no generating worker looks for waiting requests, unless told otherwise. */
    public static final Duration DEFAULT_ZERO_WATCH = Duration.ofSeconds(1);

    public Options(List<URI> frontends, Duration interval, boolean advisory) {
      this(frontends, interval, advisory, null);
    }

    public Options(List<URI> frontends, Duration interval, boolean advisory, String apiKey) {
      this(frontends, interval, advisory, apiKey, DEFAULT_ZERO_WATCH);
    }
  }

  private final Planner planner;
  private final Connector connector;
  private final Options options;
  private final PlannerMetrics metrics;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "planner-loop");
    t.setDaemon(true);
    return t;
  });
  private final Map<Pool, Integer> failuresInRow = new EnumMap<>(Pool.class);
  private final Map<Pool, Long> retryAt = new EnumMap<>(Pool.class);
  private FrontendSnapshot previous;
  private long previousNanos;
  private long tick;
  private boolean noGeneratingWorker; // the last decision's: the decode (or aggregated) pool at 0

  public PlannerLoop(Planner planner, Connector connector, Options options, PlannerMetrics metrics) {
    this.planner = planner;
    this.connector = connector;
    this.options = options;
    this.metrics = metrics;
  }

  /** Runs the intervals on the loop's thread: the first at once (or one interval on, when ticks ran already). */
  public void start() {
    long ms = options.interval().toMillis();
    timer.scheduleAtFixedRate(this::safeTick, previous == null ? 0 : ms, ms, TimeUnit.MILLISECONDS);
    long watch = options.zeroWatch() == null ? 0 : options.zeroWatch().toMillis();
    if (watch > 0 && watch < ms) {
      timer.scheduleWithFixedDelay(this::safeWatch, watch, watch, TimeUnit.MILLISECONDS);
    }
  }

  private void safeTick() {
    try {
      tick();
    } catch (RuntimeException e) {
      log.error("planner interval failed; next interval goes on", e);
    }
  }

  private void safeWatch() {
    try {
      watch();
    } catch (RuntimeException e) {
      log.error("planner's look for waiting requests failed; the intervals go on", e);
    }
  }

  /**
   * While the last decision left no generating worker: reads the frontends, and if a request is
   * waiting for a worker, ends the interval now and decides (the planner brings a pool back at the
   * first waiting request), so that the request waits for a worker's start-up, not for the rest of
   * the interval as well. Returns that decision, or null when there was nothing to do.
   */
  public Decision watch() {
    if (!noGeneratingWorker) {
      return null;
    }
    FrontendSnapshot now = scrapeOrNull(false); // a failure is the interval's own scrape's to report
    if (now == null || !(now.waiting() > 0)) {
      return null;
    }
    log.info("{} request(s) waiting with no generating worker: deciding now, not at the interval's end", fmt(now.waiting()));
    return decide(now);
  }

  /** One interval (public for tests that drive the loop themselves). */
  public Decision tick() {
    FrontendSnapshot now = scrapeOrNull(true);
    return now == null ? null : decide(now);
  }

  /** The frontends now, or null when they could not be read (counted and logged when {@code report}). */
  private FrontendSnapshot scrapeOrNull(boolean report) {
    try {
      return scrape();
    } catch (IOException e) {
      if (report) {
        metrics.scrapeFailed();
        log.warn("cannot read the frontends' metrics: {}; skipping this interval", e.getMessage());
      }
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  private Decision decide(FrontendSnapshot now) {
    long nanos = System.nanoTime();
    if (previous == null) {
      previous = now;
      previousNanos = nanos;
      log.info("planner: {} mode, connector {}, every {} s{}; first scrape sees {} workers",
          planner.effectiveMode(), connector.name(), options.interval().toSeconds(), options.advisory() ? " (advisory: decides, does not act)" : "",
          now.workers().size());
      return null;
    }
    tick++;
    Map<Pool, Integer> starting = new EnumMap<>(Pool.class);
    for (Pool p : Pool.values()) {
      starting.put(p, connector.starting(p));
    }
    IntervalStats stats = IntervalMeasurement.between(previous, now, (nanos - previousNanos) / 1e9, starting);
    previous = now;
    previousNanos = nanos;
    Decision d = planner.plan(stats);
    noGeneratingWorker = d.decode() == 0;
    metrics.decided(stats, d);
    log.info("interval {}: prefill {} → {}, decode {} → {}{} | {} | measured {} req ({} /s), ISL {}, OSL {}, hit {}, TTFT p90 {} s, ITL p90 {} s, waiting {}",
        d.interval(), d.prefillBefore(), d.prefill(), d.decodeBefore(), d.decode(), options.advisory() ? " (advisory)" : "",
        d.reason(), fmt(stats.requests()), fmt(stats.requestRate()), fmt(stats.meanIsl()), fmt(stats.meanOsl()),
        fmt(stats.prefixHitRate()), fmt(stats.ttftP90Seconds()), fmt(stats.itlP90Seconds()), fmt(stats.waitingRequests()));
    if (!options.advisory()) {
      for (Pool p : Pool.values()) {
        apply(p, d.replicas(p), now);
      }
    }
    return d;
  }

  private void apply(Pool pool, int replicas, FrontendSnapshot now) {
    if (tick < retryAt.getOrDefault(pool, 0L)) {
      return; // backing off after failures
    }
    try {
      connector.scale(pool, replicas, leastLoaded(now, pool));
      failuresInRow.put(pool, 0);
    } catch (ConnectorException e) {
      int n = failuresInRow.merge(pool, 1, Integer::sum);
      long wait = Math.min(8, 1L << (n - 1));
      retryAt.put(pool, tick + wait);
      metrics.connectorFailed(pool);
      log.warn("{} connector could not scale the {} pool to {} (failure {} in a row; next try in {} intervals): {}",
          connector.name(), pool.cliName(), replicas, n, wait, e.getMessage());
    }
  }

  /** Serving workers of {@code pool}, least loaded first (running + waiting requests, then queued tokens). */
  static List<String> leastLoaded(FrontendSnapshot s, Pool pool) {
    List<FrontendSnapshot.WorkerView> ws = new ArrayList<>();
    for (FrontendSnapshot.WorkerView w : s.workers().values()) {
      if (w.pool() == pool && w.serving()) {
        ws.add(w);
      }
    }
    ws.sort(Comparator.comparingDouble((FrontendSnapshot.WorkerView w) -> w.active() + w.waiting())
        .thenComparingDouble(FrontendSnapshot.WorkerView::queuedTokens));
    return ws.stream().map(FrontendSnapshot.WorkerView::id).toList();
  }

  private FrontendSnapshot scrape() throws IOException, InterruptedException {
    List<List<PrometheusText.Sample>> scrapes = new ArrayList<>();
    for (URI base : options.frontends()) {
      URI url = base.resolve("/metrics");
      HttpRequest.Builder get = HttpRequest.newBuilder(url).timeout(Duration.ofSeconds(5)).GET();
      if (options.apiKey() != null && !options.apiKey().isBlank()) {
        get.header("Authorization", "Bearer " + options.apiKey());
      }
      HttpResponse<String> r;
      try {
        r = http.send(get.build(), HttpResponse.BodyHandlers.ofString());
      } catch (java.net.ConnectException e) {
        throw new IOException(url + ": connection refused (is the frontend running there?)", e);
      } catch (java.net.http.HttpTimeoutException e) {
        throw new IOException(url + ": no answer within 5 s", e);
      } catch (IOException e) {
        throw new IOException(url + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()), e);
      }
      if (r.statusCode() != 200) {
        throw new IOException(url + " answered " + r.statusCode());
      }
      scrapes.add(PrometheusText.parse(r.body()));
    }
    return FrontendSnapshot.of(scrapes);
  }

  private static String fmt(double v) {
    return Double.isFinite(v) ? String.format(java.util.Locale.ROOT, "%.3g", v) : "-";
  }

  @Override
  public void close() {
    timer.shutdownNow();
    try {
      timer.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
