package dev.tandem.router.grpc;

import dev.tandem.common.GenerationRequest;
import dev.tandem.common.RemotePrefillTarget;
import dev.tandem.common.WorkerDescription;
import dev.tandem.router.RoutingRequest;
import dev.tandem.router.Selection;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.WorkerLoad;
import dev.tandem.router.WorkerSelector;
import dev.tandem.router.index.Overlap;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The router's disaggregation: it has every decode worker measure its KV link to every prefill
 * worker as they join (the {@code ProbeLink} RPC), over every transfer backend both run (with
 * {@code --kv-transfer auto}, ucx and tcp where libucx0 is installed), and per request asks the
 * {@link SplitPolicy} whether to send the prompt to a prefill worker (picked by the same selector,
 * over the prefill pool) with the decode worker pulling its KV over the backend that moves this
 * request's bytes soonest by the figures measured for that pair.
 *
 * <p>Thread-safe.
 */
public final class Disaggregation implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Disaggregation.class);
  static final Duration PROBE_TIMEOUT = Duration.ofSeconds(60);

  private final WorkerPool pool;
  private final SplitPolicy policy;
  /** Per decode→prefill pair, the figures measured for each backend. */
  private final Map<String, Map<String, SplitPolicy.Link>> links = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<?>> probes = new ConcurrentHashMap<>();
  private final AtomicLong splits = new AtomicLong();
  private final AtomicLong kept = new AtomicLong();
  private volatile SplitPolicy.Decision last;

  Disaggregation(WorkerPool pool, SplitPolicy policy) {
    this.pool = pool;
    this.policy = policy;
    if (policy.mode() != SplitPolicy.Mode.NEVER) {
      pool.onJoin(this::probeNewPairs);
      pool.onLeave(this::forget);
    }
  }

  public SplitPolicy policy() {
    return policy;
  }

  /** Requests sent to a prefill worker so far. */
  public long splits() {
    return splits.get();
  }

  /** Requests that could have been split (a prefill worker was reachable) but were not. */
  public long keptLocal() {
    return kept.get();
  }

  /** The most recent decision, for logs and tests; null before any. */
  public SplitPolicy.Decision lastDecision() {
    return last;
  }

  /**
   * The measured link from a decode worker to a prefill worker, over the backend a 1,000-token
   * prompt's KV would take; null if not (yet) measured.
   */
  public SplitPolicy.Link link(String decodeWorkerId, String prefillWorkerId) {
    var byBackend = links.get(decodeWorkerId + "->" + prefillWorkerId);
    if (byBackend == null) {
      return null;
    }
    String best = fastest(byBackend, TYPICAL_PULL_TOKENS * pool.all().stream()
        .filter(w -> w.workerId().value().equals(decodeWorkerId)).mapToLong(w -> w.description().kvBytesPerToken()).findFirst().orElse(0));
    return best == null ? null : byBackend.get(best);
  }

  /** Every backend's measured link from a decode worker to a prefill worker (empty if none measured yet). */
  public Map<String, SplitPolicy.Link> links(String decodeWorkerId, String prefillWorkerId) {
    return Map.copyOf(links.getOrDefault(decodeWorkerId + "->" + prefillWorkerId, Map.of()));
  }

  /** The prompt size the probe log and {@link #link} compare backends at. */
  static final long TYPICAL_PULL_TOKENS = 1_000;

  /** The backend that would move {@code bytes} soonest by its measured latency and throughput; null for none. */
  static String fastest(Map<String, SplitPolicy.Link> byBackend, long bytes) {
    String best = null;
    double bestSeconds = Double.POSITIVE_INFINITY;
    for (var e : byBackend.entrySet()) {
      double s = seconds(e.getValue(), bytes);
      if (s < bestSeconds) {
        best = e.getKey();
        bestSeconds = s;
      }
    }
    return best;
  }

  private static double seconds(SplitPolicy.Link link, long bytes) {
    return link.bytesPerSecond() > 0 ? link.latencySeconds() + bytes / link.bytesPerSecond() : Double.POSITIVE_INFINITY;
  }

  /** Waits until every link probe started so far has ended (answered or failed). */
  public void awaitLinkProbes(Duration timeout) throws Exception {
    CompletableFuture.allOf(probes.values().stream().map(f -> f.handle((v, e) -> null)).toArray(CompletableFuture[]::new))
        .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Drops the links measured to or from a worker that left, so that it is probed again if it returns. */
  private void forget(WorkerClient left) {
    String id = left.workerId().value();
    java.util.function.Predicate<String> involves = k -> k.startsWith(id + "->") || k.endsWith("->" + id);
    links.keySet().removeIf(involves);
    probes.keySet().removeIf(involves);
  }

  private void probeNewPairs(WorkerClient joined) {
    if (!joined.movesKv()) {
      return;
    }
    for (WorkerClient other : pool.all()) {
      if (other == joined || !other.movesKv() || other.isPrefillOnly() == joined.isPrefillOnly()) {
        continue;
      }
      WorkerClient decode = joined.isPrefillOnly() ? other : joined;
      WorkerClient prefill = joined.isPrefillOnly() ? joined : other;
      String key = decode.workerId().value() + "->" + prefill.workerId().value();
      String mismatch = kvLayoutMismatch(decode.description(), prefill.description());
      if (mismatch != null) {
        log.error("KV link {}: {}; refusing to pair them, requests will not be split across it", key, mismatch);
        continue;
      }
      List<String> common = new ArrayList<>();
      for (String backend : decode.description().kvTransferBackends()) {
        if (prefill.description().endpoint(backend) != null) {
          common.add(backend);
        }
      }
      if (common.isEmpty()) {
        log.warn("KV link {}: no transfer backend in common (decode runs {}, prefill runs {}); requests will not be split across it",
            key, decode.description().kvTransferBackends(), prefill.description().kvTransferBackends());
        continue;
      }
      // One backend at a time: probes at once would share the link and each measure part of it.
      probes.computeIfAbsent(key, k -> probeInTurn(key, decode, prefill, common, 0));
    }
  }

  /**
   * Why {@code decode} cannot read {@code prefill}'s blocks as its own, or null when it can: the same
   * KV cache dtype, and keys rotated alike (a LongRoPE model's factor set follows the served context).
   */
  static String kvLayoutMismatch(WorkerDescription decode, WorkerDescription prefill) {
    if (!decode.kvCacheDtype().equals(prefill.kvCacheDtype())) {
      return "the decode worker stores KV in " + decode.kvCacheDtype() + ", the prefill worker in " + prefill.kvCacheDtype()
          + " (start both with the same --kv-cache-dtype)";
    }
    if (!decode.kvKeyRotation().equals(prefill.kvKeyRotation())) {
      return "the decode worker rotates keys with " + rotation(decode.kvKeyRotation()) + ", the prefill worker with "
          + rotation(prefill.kvKeyRotation()) + " (LongRoPE's factor set follows --max-context-length: start both on the same"
          + " side of the model's original context)";
    }
    return null;
  }

  private static String rotation(String keyRotation) {
    return keyRotation.isEmpty() ? "the model's one rotation" : keyRotation;
  }

  private CompletableFuture<Void> probeInTurn(String key, WorkerClient decode, WorkerClient prefill, List<String> backends, int next) {
    if (next == backends.size()) {
      logChoice(key, decode);
      return CompletableFuture.completedFuture(null);
    }
    String backend = backends.get(next);
    return decode.probeLink(prefill.address(), backend, PROBE_TIMEOUT)
        .handle((WorkerClient.Link f, Throwable e) -> {
          if (e != null) {
            log.warn("link probe {} over {} failed: {}; requests will not be split across it over {}", key, backend, e.toString(), backend);
          } else {
            links.computeIfAbsent(key, k -> new ConcurrentHashMap<>()).put(backend, new SplitPolicy.Link(f.bytesPerSecond(), f.latencyMicros() / 1e6));
            log.info("KV link {} ({}): {} µs, {} MB/s", key, f.backend(),
                String.format("%.0f", f.latencyMicros()), String.format("%.3g", f.bytesPerSecond() / 1e6));
          }
          return null;
        })
        .thenCompose(v -> probeInTurn(key, decode, prefill, backends, next + 1));
  }

  /** With more than one backend measured, says which one a typical pull takes and why. */
  private void logChoice(String key, WorkerClient decode) {
    var byBackend = links.get(key);
    if (byBackend == null || byBackend.size() < 2) {
      return;
    }
    long bytes = TYPICAL_PULL_TOKENS * decode.description().kvBytesPerToken();
    StringBuilder times = new StringBuilder();
    for (var e : new java.util.TreeMap<>(byBackend).entrySet()) {
      times.append(times.isEmpty() ? "" : ", ").append(e.getKey()).append(' ')
          .append(String.format("%.1f ms", seconds(e.getValue(), bytes) * 1e3));
    }
    log.info("KV link {}: a {}-token prompt's KV ({} MB) takes {}: pulls go over {} (each request's pull takes the backend"
            + " that moves its bytes soonest)", key, TYPICAL_PULL_TOKENS, String.format("%.1f", bytes / 1e6), times,
        fastest(byBackend, bytes));
  }

  /**
   * The policy's answer for one request on {@code decode}: the decision, and the prefill worker
   * with the blocks it must compute when the answer is to split ({@code prefill} null otherwise).
   */
  record Split(SplitPolicy.Decision decision, WorkerClient prefill, int prefillBlocks, String backend) {
    /** The request as the decode worker gets it: naming the prefill worker and the backend to pull with. */
    GenerationRequest request(GenerationRequest request) {
      return request.withRemotePrefill(new RemotePrefillTarget(prefill.address(), prefill.workerId(), 0, backend));
    }
  }

  /**
   * Asks the policy about a request routed to {@code decode}; null when there is nothing to decide
   * (no prefill worker reachable, policy never, a decode worker without transfer, nothing to
   * decode). Called under the router's lock.
   */
  Split consider(
      GenerationRequest request, RoutingRequest routing, WorkerClient decode, Selection decodeChoice, WorkerSelector selector) {
    if (policy.mode() == SplitPolicy.Mode.NEVER || !decode.movesKv() || request.stop().maxTokens() < 2
        || request.sampling().wantsPromptLogprobs()) { // the prompt's logprobs come from the worker that computes it
      return null;
    }
    List<WorkerClient> prefillers = new ArrayList<>();
    for (WorkerClient w : pool.routable()) {
      if (w.isPrefillOnly() && w.movesKv() && w.serves(request.loraName())
          && kvLayoutMismatch(decode.description(), w.description()) == null) {
        prefillers.add(w);
      }
    }
    if (prefillers.isEmpty()) {
      return null;
    }
    Selection pick = selector.select(routing, prefillers.stream().map(pool::load).toList());
    WorkerClient prefill = prefillers.stream().filter(w -> w.workerId().equals(pick.worker())).findFirst().orElseThrow();
    int blockSize = routing.blockSize();
    int prompt = routing.promptTokens();
    WorkerLoad dLoad = pool.load(decode);
    WorkerLoad pLoad = pool.load(prefill);
    Overlap decodeOverlap = decodeChoice.predictedOverlap();
    int uncachedOnDecode = Math.max(1, prompt - decodeOverlap.blocks() * blockSize);
    var measured = links.getOrDefault(decode.workerId().value() + "->" + prefill.workerId().value(), Map.of());
    String backend = fastest(measured, (long) uncachedOnDecode * decode.description().kvBytesPerToken());
    SplitPolicy.Link link = backend == null ? null : measured.get(backend);
    SplitPolicy.Decision decision =
        policy.decide(
            new SplitPolicy.Inputs(
                prompt,
                uncachedOnDecode,
                Math.max(1, prompt - pick.predictedOverlap().blocks() * blockSize),
                decode.description().kvBytesPerToken(),
                decode.description().numLayers(),
                link,
                dLoad.speed().prefillCost(),
                pLoad.speed().prefillCost(),
                dLoad.queuedPrefillTokens(blockSize),
                pLoad.queuedPrefillTokens(blockSize),
                dLoad.activeRequests(),
                sharesCompute(decode, prefill),
                SplitPolicy.Predicted.of(decodeChoice.predictedTtftSeconds(), pick.predictedTtftSeconds())));
    if (backend != null) {
      decision = decision.over(backend);
    }
    last = decision;
    if (!decision.split()) {
      kept.incrementAndGet();
      return new Split(decision, null, 0, backend);
    }
    splits.incrementAndGet();
    return new Split(decision, prefill, Math.max(0, routing.promptBlocks() - pick.predictedOverlap().blocks()),
        backend == null ? "" : backend);
  }

  static boolean sharesCompute(WorkerClient a, WorkerClient b) {
    return sharesCompute(a.description(), b.description());
  }

  /**
   * Whether a prefill on one stalls the other's streams anyway: the same GPU (its UUID, unique
   * across hosts) where either computes on one — two GPU workers on one node with the default
   * (every) CPU set share nothing — else the same host with overlapping CPU sets.
   */
  static boolean sharesCompute(WorkerDescription ra, WorkerDescription rb) {
    if (!ra.computeDevice().isEmpty() || !rb.computeDevice().isEmpty()) {
      return ra.computeDevice().equals(rb.computeDevice());
    }
    if (!ra.host().equals(rb.host())) {
      return false;
    }
    return cpuSet(ra.cpus()).intersects(cpuSet(rb.cpus()));
  }

  /** Parses a Linux CPU list ("0-3,8"); empty or unparsable means every CPU. */
  static BitSet cpuSet(String list) {
    BitSet set = new BitSet();
    try {
      for (String part : list.split(",")) {
        String p = part.trim();
        if (p.isEmpty()) {
          continue;
        }
        int dash = p.indexOf('-');
        int from = Integer.parseInt(dash < 0 ? p : p.substring(0, dash));
        int to = dash < 0 ? from : Integer.parseInt(p.substring(dash + 1));
        set.set(from, to + 1);
      }
    } catch (NumberFormatException e) {
      set.clear();
    }
    if (set.isEmpty()) {
      set.set(0, 4096);
    }
    return set;
  }

  @Override
  public void close() {
    probes.values().forEach(f -> f.cancel(true));
  }
}
