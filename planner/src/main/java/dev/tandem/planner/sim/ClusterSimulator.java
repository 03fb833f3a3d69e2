package dev.tandem.planner.sim;

import dev.tandem.common.PrefillCost;
import dev.tandem.common.PromptLengthBuckets;
import dev.tandem.common.WorkerId;
import dev.tandem.planner.Decision;
import dev.tandem.planner.HistogramQuantile;
import dev.tandem.planner.IntervalStats;
import dev.tandem.planner.LengthMix;
import dev.tandem.planner.Planner;
import dev.tandem.planner.Pool;
import dev.tandem.planner.PoolLoad;
import dev.tandem.planner.Profile;
import dev.tandem.router.KvSelector;
import dev.tandem.router.PredictedTtftCost;
import dev.tandem.router.RoutingRequest;
import dev.tandem.router.Selection;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.WorkerLoad;
import dev.tandem.router.index.BlockHashIndex;
import dev.tandem.router.index.Overlap;
import it.unimi.dsi.fastutil.doubles.DoubleArrayList;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.LongConsumer;

/**
 * A discrete-event cluster: prefill and decode workers timed by a {@link Profile}, routed by the
 * router's own code — {@link BlockHashIndex} fed by the workers' simulated KV events, {@link
 * KvSelector} with {@link PredictedTtftCost} choosing the decode worker and the prefill worker,
 * {@link SplitPolicy} deciding whether to split — and sized by the planner's own {@link Planner},
 * driven by a {@link Trace}. New workers serve after {@code startupSeconds}; removed workers drain
 * (no new requests, the running ones finish); requests arriving while no decode worker serves wait
 * at the "frontend" and are routed when one does.
 *
 * <p>For big clusters each decision scores the workers that hold part of the prompt plus the
 * {@code narrowTo} least loaded (a load-ordered set per pool), not every worker; {@code narrowTo 0}
 * scores all. Single-threaded; one run per instance.
 */
public final class ClusterSimulator {
  private static final int ARRIVAL = 0, PREFILL_DONE = 1, FIRST_TOKEN = 2, DECODE_CHECK = 3, WORKER_READY = 4, PLAN = 5, SAMPLE = 6;
  private static final double GIVE_UP_AFTER_SECONDS = 3600;
  private static final double[] BUCKETS = PromptLengthBuckets.bounds();
  /**
   * How long after a request starts waiting with no generating worker the planner decides, as the
   * live loop's watch does at {@code tandem planner}'s default {@code --zero-watch-s}.
   */
  static final double ZERO_WATCH_SECONDS = 1;
  /** The router's ties are drawn from this seed: the same trace and settings give the same run. */
  private static final long TIE_SEED = 1;

  private record Event(double time, long seq, int kind, SimRequest request, SimWorker worker, long version)
      implements Comparable<Event> {
    @Override
    public int compareTo(Event o) {
      int c = Double.compare(time, o.time);
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }

  private final SimConfig config;
  private final Trace trace;
  private final Profile profile;
  private final int blockTokens;
  private final PriorityQueue<Event> events = new PriorityQueue<>();
  private long seq;
  private double now;
  private final BlockHashIndex index = new BlockHashIndex();
  private final Map<WorkerId, SimWorker> byId = new HashMap<>();
  private final KvSelector selector;
  private final SplitPolicy split;
  private final PrefillCost cost;
  private final Planner planner;
  private long planVersion; // a PLAN event of an older version was superseded by an early decision
  private double intervalStart;
  private boolean noGeneratingWorker;
  private boolean earlyPlanPending;
  /** Workers not stopped yet; a stopped one leaves this list, the index and {@code byId}. */
  private final List<SimWorker> workers = new ArrayList<>();
  private double stoppedWorkerSeconds;
  private int heldWorkers; // starting or ready, both pools
  private static final Comparator<SimWorker> BY_LOAD = (a, b) -> {
    int c = Long.compare(a.loadKey, b.loadKey);
    return c != 0 ? c : Integer.compare(a.serial, b.serial);
  };
  private final TreeSet<SimWorker> prefillReady = new TreeSet<>(BY_LOAD);
  private final TreeSet<SimWorker> decodeReady = new TreeSet<>(BY_LOAD);
  private final ArrayDeque<SimRequest> waiting = new ArrayDeque<>();
  private int nextWorker;
  private int nextArrival;
  private long inFlight;
  private long decisions;
  private long stamps;
  private int scaleEvents;
  private int peakWorkers;
  // the whole run
  private final DoubleArrayList ttfts = new DoubleArrayList();
  private final DoubleArrayList itls = new DoubleArrayList();
  private int met;
  // the current planner interval and timeline window
  private final Window interval = new Window();
  private final Window sample = new Window();
  private final List<SimReport.Sample> timeline = new ArrayList<>();

  /** Arrivals and finished requests over a window of simulated time. */
  private static final class Window {
    int arrivals;
    long isl;
    long osl;
    long cached;
    long prompt;
    int met;
    int finished;
    /** TTFTs of the requests whose first token came in this window (as the frontend records them). */
    final DoubleArrayList ttft = new DoubleArrayList();
    /** Inter-token gaps in this window, counted in buckets as the frontend's histogram counts them. */
    final double[] itl = new double[GAP_BUCKETS];
    /** Requests per bucket of uncached prompt length, as the frontend's histogram counts them. */
    final long[] uncached = new long[BUCKETS.length + 1];

    void clear() {
      arrivals = 0;
      isl = osl = cached = prompt = 0;
      met = 0;
      finished = 0;
      ttft.clear();
      Arrays.fill(itl, 0);
      Arrays.fill(uncached, 0);
    }

    /** The uncached lengths as the planner reads them from a histogram. */
    LengthMix uncachedMix() {
      TreeMap<Double, Double> cumulative = new TreeMap<>();
      long n = 0;
      for (int i = 0; i < uncached.length; i++) {
        n += uncached[i];
        cumulative.put(i < BUCKETS.length ? BUCKETS[i] : Double.POSITIVE_INFINITY, (double) n);
      }
      return LengthMix.between(new TreeMap<>(), cumulative);
    }
  }

  private java.util.function.ObjDoubleConsumer<Decision> decisionLog;

  /** Hears every planner decision with the simulated time it was taken at. */
  public ClusterSimulator onDecision(java.util.function.ObjDoubleConsumer<Decision> log) {
    this.decisionLog = log;
    return this;
  }

  public ClusterSimulator(SimConfig config, Trace trace) {
    this(config, trace, config.planner() == null ? null : new Planner(config.planner()));
  }

  /** A run whose pools {@code planner} sizes (null: they stay as they started), built for {@code config.planner()}. */
  ClusterSimulator(SimConfig config, Trace trace, Planner planner) {
    this.config = config;
    this.trace = trace;
    this.profile = config.profile();
    this.blockTokens = trace.blockTokens();
    this.cost = fit(profile);
    this.selector = new KvSelector(index, new BlockHashIndex(), w -> false,
        w -> byId.get(w).inFlight(), w -> byId.get(w).cachedBlocks(), PredictedTtftCost.defaults(), 0)
        .withRandom(new SplittableRandom(TIE_SEED));
    this.split = new SplitPolicy(config.split(), 1.0);
    this.planner = planner;
  }

  /** The profile's prefill points fitted to the router's prefill cost model. */
  static PrefillCost fit(Profile p) {
    int n = p.prefill().size();
    double[] tokens = new double[n], context = new double[n], seconds = new double[n];
    for (int i = 0; i < n; i++) {
      double isl = p.prefill().get(i).isl();
      tokens[i] = isl;
      context[i] = isl * (isl - 1) / 2;
      seconds[i] = p.prefill().get(i).seconds();
    }
    PrefillCost c = PrefillCost.fit(tokens, context, seconds, n);
    return c.known() ? c : new PrefillCost(p.prefillSeconds(1000) / 1000, 0);
  }

  /** Runs the trace to the last request's end; {@code progress} hears the simulated second now and then. */
  public SimReport run(LongConsumer progress) {
    long wallStart = System.nanoTime();
    for (int i = 0; i < config.initialPrefill(); i++) {
      startWorker(Pool.PREFILL, 0);
    }
    for (int i = 0; i < config.initialDecode(); i++) {
      startWorker(Pool.DECODE, 0);
    }
    scaleEvents = 0;
    scheduleArrival();
    if (planner != null) {
      push(config.planner().intervalSeconds(), PLAN, null, null, planVersion);
    }
    push(config.sampleSeconds(), SAMPLE, null, null, 0);
    double end = trace.durationSeconds() + GIVE_UP_AFTER_SECONDS;
    long reported = -1;
    while (!events.isEmpty()) {
      Event e = events.poll();
      now = e.time();
      if (now > end) {
        break;
      }
      if (progress != null && (long) now / 60 != reported) {
        reported = (long) now / 60;
        progress.accept((long) now);
      }
      switch (e.kind()) {
        case ARRIVAL -> arrive(e.request());
        case PREFILL_DONE -> prefillDone(e.request(), (PrefillSim) e.worker());
        case FIRST_TOKEN -> firstToken(e.request(), (DecodeSim) e.worker());
        case DECODE_CHECK -> decodeCheck((DecodeSim) e.worker(), e.version());
        case WORKER_READY -> ready(e.worker());
        case PLAN -> {
          if (e.version() == planVersion) {
            plan();
          }
        }
        case SAMPLE -> sample();
        default -> throw new IllegalStateException("event " + e.kind());
      }
    }
    double duration = Math.max(trace.durationSeconds(), now);
    double workerSeconds = stoppedWorkerSeconds;
    for (SimWorker w : workers) {
      workerSeconds += w.workerSeconds(duration);
    }
    double[] t = ttfts.toDoubleArray();
    Arrays.sort(t);
    double[] l = itls.toDoubleArray();
    Arrays.sort(l);
    int requests = trace.requests().size();
    double goodput = met / duration;
    double meanWorkers = workerSeconds / duration;
    return new SimReport(config.name(), trace.name(), requests, t.length, requests == 0 ? 1 : (double) met / requests,
        percentile(t, 0.5), percentile(t, 0.9), percentile(t, 0.99), percentile(l, 0.9), duration, goodput,
        workerSeconds, meanWorkers, meanWorkers > 0 ? goodput / meanWorkers : 0, scaleEvents, peakWorkers,
        (System.nanoTime() - wallStart) / 1e9, decisions, List.copyOf(timeline));
  }

  private void push(double time, int kind, SimRequest r, SimWorker w, long version) {
    events.add(new Event(time, seq++, kind, r, w, version));
  }

  private void scheduleArrival() {
    if (nextArrival < trace.requests().size()) {
      TraceRequest t = trace.requests().get(nextArrival++);
      push(t.arrivalSeconds(), ARRIVAL, new SimRequest(t), null, 0);
    }
  }

  private boolean busy() {
    return nextArrival < trace.requests().size() || inFlight > 0 || !waiting.isEmpty();
  }

  // ---- requests ----

  private void arrive(SimRequest r) {
    scheduleArrival();
    inFlight++;
    for (Window w : new Window[] {interval, sample}) {
      w.arrivals++;
      w.isl += r.isl();
      w.osl += r.osl();
    }
    route(r);
  }

  private void route(SimRequest r) {
    if (decodeReady.isEmpty()) {
      waiting.add(r);
      if (planner != null && noGeneratingWorker && !earlyPlanPending) {
        // as the live loop's watch: a request waiting with the pools at zero is decided on at once
        earlyPlanPending = true;
        push(now + ZERO_WATCH_SECONDS, PLAN, null, null, ++planVersion);
      }
      return;
    }
    decisions++;
    RoutingRequest routing = new RoutingRequest("r", r.isl(), r.hashes, blockTokens);
    Map<WorkerId, Overlap> overlaps = index.overlaps(r.hashes);
    Selection decodeChoice = choose(routing, decodeReady, overlaps);
    DecodeSim d = (DecodeSim) byId.get(decodeChoice.worker());
    int decodeCached = cachedTokens(r, d.cachedPrefix(r.hashes));
    Selection prefillChoice = prefillReady.isEmpty() ? null : choose(routing, prefillReady, overlaps);
    PrefillSim p = prefillChoice == null ? null : (PrefillSim) byId.get(prefillChoice.worker());
    r.decode = d;
    d.reserve();
    boolean remote = false;
    int prefillCached = 0;
    if (p != null) {
      prefillCached = cachedTokens(r, p.cachedPrefix(r.hashes));
      SplitPolicy.Decision decision = split.decide(new SplitPolicy.Inputs(r.isl(), r.isl() - decodeCached,
          r.isl() - prefillCached, config.kvBytesPerToken(), config.layers(),
          new SplitPolicy.Link(config.linkBytesPerSecond(), 20e-6), cost, cost, d.localPrefillTokens(),
          p.queuedTokens(), d.running(), false,
          SplitPolicy.Predicted.of(decodeChoice.predictedTtftSeconds(), prefillChoice.predictedTtftSeconds())));
      remote = decision.split();
    }
    if (remote) {
      r.split = true;
      r.prefill = p;
      r.cachedTokens = prefillCached;
      r.uncachedTokens = r.isl() - prefillCached;
      // the decode worker still needs what it lacks of the prompt: that crosses the link
      r.target = r.isl() - decodeCached;
      double done = p.enqueue(r, r.uncachedTokens, now);
      push(done, PREFILL_DONE, r, p, 0);
      touch(p);
    } else {
      r.cachedTokens = decodeCached;
      r.uncachedTokens = r.isl() - decodeCached;
      double first = d.prefillLocally(r, now);
      push(first, FIRST_TOKEN, r, d, 0);
      scheduleCompletion(d);
    }
    touch(d);
    for (Window w : new Window[] {interval, sample}) {
      w.cached += r.cachedTokens;
      w.prompt += r.isl();
    }
    interval.uncached[PromptLengthBuckets.bucketOf(r.uncachedTokens)]++;
  }

  /** Cached tokens for {@code blocks} leading cached blocks (at least one token is always computed). */
  private int cachedTokens(SimRequest r, int blocks) {
    return (int) Math.min((long) blocks * blockTokens, r.isl() - 1L);
  }

  /** The selector's choice among the pool's routable workers (narrowed for big pools). */
  private Selection choose(RoutingRequest routing, TreeSet<SimWorker> pool, Map<WorkerId, Overlap> overlaps) {
    List<WorkerLoad> loads = new ArrayList<>();
    int narrow = config.narrowTo();
    if (narrow <= 0 || pool.size() <= 2 * narrow) {
      for (SimWorker w : pool) {
        loads.add(load(w));
      }
    } else {
      long stamp = ++stamps;
      int k = 0;
      for (SimWorker w : pool) {
        if (k++ >= narrow) {
          break;
        }
        w.stamp = stamp;
        loads.add(load(w));
      }
      Pool kind = pool.first().pool;
      for (WorkerId id : overlaps.keySet()) {
        SimWorker w = byId.get(id);
        if (w != null && w.pool == kind && w.routable() && w.stamp != stamp) {
          w.stamp = stamp;
          loads.add(load(w));
        }
      }
    }
    return selector.select(routing, loads, overlaps);
  }

  private WorkerLoad load(SimWorker w) {
    if (w instanceof PrefillSim p) {
      return new WorkerLoad(w.id, p.inFlight(), (int) (p.queuedTokens() / blockTokens), 0, p.inFlight(), 0,
          p.cachedBlocks(), p.cacheCapacity(), new WorkerLoad.Speed(cost, p.queuedTokens(), profile.maxNumSeqs(), 0, 0));
    }
    DecodeSim d = (DecodeSim) w;
    return new WorkerLoad(w.id, d.inFlight(), (int) (d.localPrefillTokens() / blockTokens), 0, d.running(),
        d.inFlight() - d.running(), d.cachedBlocks(), d.cacheCapacity(),
        new WorkerLoad.Speed(cost, d.localPrefillTokens(), profile.maxNumSeqs(), 0, d.currentItl()));
  }

  private void prefillDone(SimRequest r, PrefillSim p) {
    p.finish(r);
    touch(p);
    stopIfDrained(p);
    double transfer = config.kvBytesPerToken() * r.target / config.linkBytesPerSecond();
    int layers = Math.max(1, config.layers());
    double prefillSeconds = profile.prefillSeconds(r.uncachedTokens);
    double exposed = Math.max(transfer / layers, transfer - prefillSeconds * (layers - 1) / layers);
    push(now + exposed, FIRST_TOKEN, r, r.decode, 0);
  }

  private void firstToken(SimRequest r, DecodeSim d) {
    r.firstTokenAt = now;
    interval.ttft.add(r.ttft());
    sample.ttft.add(r.ttft());
    if (!r.split) {
      d.localPrefillDone(r);
    }
    d.join(r, now);
    scheduleCompletion(d);
    touch(d);
  }

  private void scheduleCompletion(DecodeSim d) {
    double t = d.nextCompletion(now);
    d.version++;
    if (!Double.isNaN(t)) {
      push(t, DECODE_CHECK, null, d, d.version);
    }
  }

  private void decodeCheck(DecodeSim d, long version) {
    if (version != d.version) {
      return;
    }
    d.complete(now, this::finished);
    scheduleCompletion(d);
    touch(d);
    stopIfDrained(d);
  }

  private void finished(SimRequest r) {
    inFlight--;
    double ttft = r.ttft();
    double itl = r.itl();
    ttfts.add(ttft);
    itls.add(itl);
    boolean good = config.targets().met(ttft, itl);
    if (good) {
      met++;
    }
    for (Window w : new Window[] {interval, sample}) {
      w.finished++;
      if (good) {
        w.met++;
      }
    }
  }

  // Gap buckets: GAP_PER_DECADE a decade from 100 µs (bucket 0 below it, the last above 1,000 s).
  private static final int GAP_PER_DECADE = 20;
  private static final double GAP_FLOOR = 1e-4;
  static final int GAP_BUCKETS = 7 * GAP_PER_DECADE + 2;

  static int gapBucket(double seconds) {
    if (!(seconds > GAP_FLOOR)) {
      return 0;
    }
    return Math.min(GAP_BUCKETS - 1, 1 + (int) (Math.log10(seconds / GAP_FLOOR) * GAP_PER_DECADE));
  }

  /** The upper bound of gap bucket {@code b}, as a histogram's {@code le}. */
  static double gapBound(int b) {
    return GAP_FLOOR * Math.pow(10, (double) b / GAP_PER_DECADE);
  }

  /** Every gap bucket's upper bound, in order. */
  private static final double[] GAP_BOUNDS = java.util.stream.IntStream.range(0, GAP_BUCKETS).mapToDouble(ClusterSimulator::gapBound).toArray();

  /** {@code count} inter-token gaps of {@code seconds} each went out on a decode worker. */
  private void gaps(double seconds, double count) {
    int b = gapBucket(seconds);
    interval.itl[b] += count;
    sample.itl[b] += count;
  }

  // ---- workers ----

  private SimWorker startWorker(Pool pool, double startup) {
    int serial = nextWorker++;
    WorkerId id = new WorkerId(pool.cliName() + "-" + serial);
    SimWorker w = pool == Pool.PREFILL
        ? new PrefillSim(id, serial, now, now + startup, index, profile, blockTokens)
        : new DecodeSim(id, serial, now, now + startup, index, profile, blockTokens, this::gaps);
    workers.add(w);
    byId.put(id, w);
    heldWorkers++;
    scaleEvents++;
    if (w.state == SimWorker.State.READY) {
      ready(w);
    } else {
      push(w.readyAt, WORKER_READY, null, w, 0);
    }
    peakWorkers = Math.max(peakWorkers, heldWorkers);
    return w;
  }

  private void ready(SimWorker w) {
    if (w.state == SimWorker.State.STARTING) {
      w.state = SimWorker.State.READY;
    }
    if (w.state != SimWorker.State.READY) {
      return;
    }
    touch(w);
    if (w.pool == Pool.DECODE) {
      while (!waiting.isEmpty()) {
        route(waiting.poll());
      }
    }
  }

  /** Re-files {@code w} in its pool's load order after a change of its load or state. */
  private void touch(SimWorker w) {
    TreeSet<SimWorker> set = w.pool == Pool.PREFILL ? prefillReady : decodeReady;
    set.remove(w);
    w.loadKey = w.load();
    if (w.routable()) {
      set.add(w);
    }
  }

  private void stopIfDrained(SimWorker w) {
    if (w.state == SimWorker.State.DRAINING && w.inFlight() == 0) {
      stop(w);
    }
  }

  /** The worker is gone: as a router does for a worker that left, its index entries go too. */
  private void stop(SimWorker w) {
    w.state = SimWorker.State.STOPPED;
    w.stoppedAt = now;
    stoppedWorkerSeconds += w.workerSeconds(now);
    workers.remove(w);
    byId.remove(w.id);
    index.removeWorker(w.id);
  }

  /** Brings {@code pool} to {@code target} workers: starts new ones, or drains the least loaded. */
  private void scale(Pool pool, int target) {
    List<SimWorker> held = new ArrayList<>();
    for (SimWorker w : workers) {
      if (w.pool == pool && (w.state == SimWorker.State.READY || w.state == SimWorker.State.STARTING)) {
        held.add(w);
      }
    }
    for (int i = held.size(); i < target; i++) {
      startWorker(pool, config.startupSeconds());
    }
    int excess = held.size() - target;
    if (excess <= 0) {
      return;
    }
    // Workers still starting go first (newest first); then the least loaded of those serving.
    held.sort(Comparator.comparingInt((SimWorker w) -> w.state == SimWorker.State.STARTING ? 0 : 1)
        .thenComparingInt(SimWorker::inFlight).thenComparingDouble(w -> -w.startedAt));
    for (int i = 0; i < excess; i++) {
      SimWorker w = held.get(i);
      scaleEvents++;
      heldWorkers--;
      if (w.state == SimWorker.State.STARTING) {
        stop(w);
      } else {
        w.state = SimWorker.State.DRAINING;
        touch(w);
        stopIfDrained(w);
      }
    }
  }

  // ---- planner and timeline ----

  /** Brings every decode worker's token count to now, so that the gaps up to now are in the windows. */
  private void flushGaps() {
    for (SimWorker w : workers) {
      if (w instanceof DecodeSim d) {
        d.advance(now);
      }
    }
  }

  private void plan() {
    flushGaps();
    double seconds = Math.max(1e-9, now - intervalStart);
    intervalStart = now;
    earlyPlanPending = false;
    IntervalStats stats = new IntervalStats(seconds, interval.arrivals,
        interval.arrivals == 0 ? Double.NaN : (double) interval.isl / interval.arrivals,
        interval.arrivals == 0 ? Double.NaN : (double) interval.osl / interval.arrivals,
        interval.prompt == 0 ? Double.NaN : (double) interval.cached / interval.prompt,
        p90(interval.ttft), p90(interval.itl), waiting.size(), poolLoad(Pool.PREFILL), poolLoad(Pool.DECODE),
        interval.uncachedMix());
    Decision d = planner.plan(stats);
    if (decisionLog != null) {
      decisionLog.accept(d, now);
    }
    scale(Pool.PREFILL, d.prefill());
    scale(Pool.DECODE, d.decode());
    noGeneratingWorker = d.decode() == 0;
    peakWorkers = Math.max(peakWorkers, heldWorkers);
    interval.clear();
    if (busy()) {
      push(now + config.planner().intervalSeconds(), PLAN, null, null, planVersion);
    }
  }

  private PoolLoad poolLoad(Pool pool) {
    int ready = 0, starting = 0;
    double queued = 0, kv = 0, active = 0;
    for (SimWorker w : workers) {
      if (w.pool != pool) {
        continue;
      }
      switch (w.state) {
        case STARTING -> starting++;
        case READY -> {
          ready++;
          if (w instanceof DecodeSim d) {
            kv += d.kvUsage();
          }
        }
        default -> {}
      }
      if (w.state == SimWorker.State.READY || w.state == SimWorker.State.DRAINING) {
        active += w.inFlight();
        queued += w instanceof PrefillSim p ? p.queuedTokens() : ((DecodeSim) w).localPrefillTokens();
      }
    }
    return new PoolLoad(ready, starting, queued, ready == 0 ? 0 : kv / ready, active);
  }

  private void sample() {
    flushGaps();
    int[] counts = new int[4];
    for (SimWorker w : workers) {
      int base = w.pool == Pool.PREFILL ? 0 : 1;
      if (w.state == SimWorker.State.READY) {
        counts[base]++;
      }
      if (w.state != SimWorker.State.STOPPED) {
        counts[base + 2]++;
      }
    }
    timeline.add(new SimReport.Sample(now, sample.arrivals / config.sampleSeconds(), counts[0], counts[1], counts[2], counts[3],
        p90(sample.ttft), p90(sample.itl), sample.finished, sample.met));
    sample.clear();
    if (busy()) {
      push(now + config.sampleSeconds(), SAMPLE, null, null, 0);
    }
  }

  private static double p90(DoubleArrayList values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    double[] v = values.toDoubleArray();
    Arrays.sort(v);
    return percentile(v, 0.9);
  }

  /**
   * The 90th percentile of the gaps counted in {@code buckets}, linear within its bucket as the
   * live planner reads the frontend's histogram ({@link HistogramQuantile}; a bucket's upper bound
   * overstated it by up to a bucket's width, 12%); NaN with none.
   */
  static double p90(double[] buckets) {
    double[] cumulative = new double[buckets.length];
    double below = 0;
    for (int b = 0; b < buckets.length; b++) {
      below += buckets[b];
      cumulative[b] = below;
    }
    return HistogramQuantile.of(GAP_BOUNDS, cumulative, buckets.length, 0.9);
  }


  static double percentile(double[] sorted, double q) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int i = (int) Math.ceil(q * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }
}
