package dev.tandem.router;

import dev.tandem.common.PrefillCost;
import dev.tandem.router.index.Overlap;
import java.util.List;

/**
 * The default KV cost: each candidate's predicted time to first token, in seconds, from its own
 * measured prefill speed (every term is a worker's {@link PrefillCost}, fitted from its prefill
 * steps and reported in its load):
 *
 * <pre>
 * cached   = min(credit × block_size, prompt − 1)          credit: device + 0.75 host + 0.25 disk blocks
 * uncached = prompt − cached
 * queued   = max(reported queued prompt tokens, router's in-flight prefill blocks × block_size)
 * queue    = queued × per_token                             work ahead of this request
 * steps    = ⌈(queued + uncached) / (max_batched_tokens − running)⌉, at least 1 (1 without limits)
 * prefill  = per_step × steps + uncached × (per_token + per_context_token × (cached + uncached / 2))
 *            per_step: the part of a prefill step that does not grow with its tokens
 * decode   = ½ × step_seconds + steps × running × per_token, when streams are running: the rest
 *            of the step in progress (step_seconds is the worker's measured recent mean), then one
 *            decode token per running stream in each of those steps
 * evict    = eviction_weight × reuse × max(new_blocks − free_blocks, 0) × block_size × per_token
 *            the prefix blocks this placement pushes out must be recomputed by someone later, as
 *            likely as recent prompts were to find their blocks cached somewhere (reuse, 0–1:
 *            {@link KvSelector} measures it; a workload that never repeats a prefix evicts nothing
 *            of value, and its placements then follow load alone)
 * stall    = running × prefill, only when an ITL target is set and a step carrying this prefill
 *            (a full chunk plus the running streams) would take longer than it
 * cost     = queue + prefill + decode + evict + stall
 * </pre>
 *
 * A worker that has not measured its prefill yet is costed at the median of the candidates that
 * have (same model), or, when none has, at a nominal 100 µs per token: the choice then follows
 * tokens to compute, like the block cost at a large prefill scale.
 *
 * <p>Plain values; thread-safe.
 */
public record PredictedTtftCost(double itlTargetSeconds, double evictionWeight, double reuse) implements KvCost {
  /** The stand-in when no candidate has measured its prefill: only ratios matter then. */
  static final PrefillCost NOMINAL = new PrefillCost(100e-6, 0);

  /** No ITL target; an evicted prefix block costs half its recompute. */
  public static PredictedTtftCost defaults() {
    return new PredictedTtftCost(0, 0.5);
  }

  public PredictedTtftCost {
    if (itlTargetSeconds < 0 || evictionWeight < 0) {
      throw new IllegalArgumentException("ITL target and eviction weight must be >= 0");
    }
    if (!(reuse >= 0 && reuse <= 1)) {
      throw new IllegalArgumentException("reuse must be within [0, 1], was " + reuse);
    }
  }

  /** Every evicted block counted as one that will be asked for again (reuse 1). */
  public PredictedTtftCost(double itlTargetSeconds, double evictionWeight) {
    this(itlTargetSeconds, evictionWeight, 1);
  }

  @Override
  public PredictedTtftCost withReuse(double share) {
    double r = Double.isNaN(share) ? 1 : Math.max(0, Math.min(1, share));
    return r == reuse || evictionWeight == 0 ? this : new PredictedTtftCost(itlTargetSeconds, evictionWeight, r); // reuse only scales eviction
  }

  @Override
  public String name() {
    return "seconds";
  }

  /** Predictions within 5% of the best are ties: prefill fits of identical workers differ by that much. */
  @Override
  public double tieTolerance() {
    return 0.05;
  }

  @Override
  public boolean needsWorkingSets() {
    return evictionWeight > 0;
  }

  /** One candidate's prediction, term by term (seconds). */
  public record Breakdown(double queue, double prefill, double decode, double evict, double stall) {
    public double total() {
      return queue + prefill + decode + evict + stall;
    }
  }

  @Override
  public Scorer scorer(RoutingRequest request, List<WorkerLoad> candidates) {
    return new Scorer() {
      private PrefillCost median; // the fleet median, computed once a candidate without a measurement needs it

      private PrefillCost fallback(WorkerLoad load) {
        if (median == null && !load.speed().prefillCost().known()) {
          median = fleetMedian(candidates);
        }
        return median;
      }

      @Override
      public double cost(int i, Overlap overlap, int cachedBlocks) {
        WorkerLoad load = candidates.get(i);
        return breakdown(request, load, overlap, cachedBlocks, fallback(load)).total();
      }

      @Override
      public double othersCost(int i, Overlap overlap, int cachedBlocks) {
        WorkerLoad load = candidates.get(i);
        return breakdown(request, load, overlap, cachedBlocks, fallback(load)).stall();
      }

      /** This prompt's prefill at the fleet's least cost per token and per attended token, over its least attention. */
      @Override
      public double loadKeyFloor(LoadOrder order) {
        return new PrefillCost(order.minPerToken(), order.minPerContextToken(), order.minPerStep(), order.leastAttention())
            .seconds(request.promptTokens(), 0);
      }

      /** The queue and this prompt's prefill; the decode, eviction and stall terms are never negative. */
      @Override
      public double lowerBoundWithoutOverlap(int i) {
        WorkerLoad load = candidates.get(i);
        PrefillCost cost = speed(load, fallback(load));
        return load.queuedPrefillTokens(request.blockSize()) * cost.perToken() + cost.seconds(request.promptTokens(), 0);
      }
    };
  }

  /**
   * The seconds of prompt work queued there (the lower bound's load part); NaN while the worker has
   * not measured its prefill (its fallback, the fleet median, is not a per-worker constant).
   */
  @Override
  public double loadKey(WorkerLoad load, int blockSize) {
    PrefillCost cost = load.speed().prefillCost();
    if (!cost.known()) {
      return Double.NaN;
    }
    return load.queuedPrefillTokens(blockSize) * cost.perToken();
  }

  /**
   * The prediction for one candidate; {@code fallback} stands in for a cost it has not measured.
   * Kept small (its terms are helpers) so that the JIT inlines it into {@link #costs} and the
   * breakdown is never allocated there: a routing decision at 1,000 workers calls it 1,000 times.
   */
  public Breakdown breakdown(RoutingRequest request, WorkerLoad load, Overlap overlap, int cachedBlocks, PrefillCost fallback) {
    PrefillCost cost = speed(load, fallback);
    int prompt = request.promptTokens();
    long cached = Math.min((long) Math.floor(overlap.credit() * request.blockSize()), Math.max(prompt - 1, 0));
    long uncached = prompt - cached;
    long queued = load.queuedPrefillTokens(request.blockSize());
    int running = load.activeRequests();
    double prefill = cost.seconds(uncached, cached) + (prefillSteps(load, queued + uncached, running) - 1) * cost.perStep();
    return new Breakdown(
        queued * cost.perToken(),
        prefill,
        decode(load, cost, queued + uncached, running),
        evict(request, load, overlap, cachedBlocks, cost),
        stall(load, cost, uncached, cached, running, prefill));
  }

  /** The worker's measured prefill cost, or {@code fallback} while it has none. */
  private static PrefillCost speed(WorkerLoad load, PrefillCost fallback) {
    return load.speed().prefillCost().known() ? load.speed().prefillCost() : fallback;
  }

  /** Steps until this prompt is prefilled, the queue ahead of it included: at least one. */
  private static long prefillSteps(WorkerLoad load, long tokensAhead, int running) {
    int budget = load.speed().maxBatchedTokens();
    return budget > running ? Math.max(1, ceilDiv(tokensAhead, budget - running)) : 1;
  }

  /** The rest of the step in progress, then one token per running stream in each step this prompt shares with them. */
  private static double decode(WorkerLoad load, PrefillCost cost, long tokensAhead, int running) {
    if (running == 0) {
      return 0;
    }
    return 0.5 * load.speed().stepSeconds() + prefillSteps(load, tokensAhead, running) * running * cost.perToken();
  }

  /** The recompute of the prefix blocks this placement pushes out of a full cache, weighted. */
  private double evict(RoutingRequest request, WorkerLoad load, Overlap overlap, int cachedBlocks, PrefillCost cost) {
    if (load.kvBlocksTotal() <= 0) {
      return 0;
    }
    int newBlocks = Math.max(request.promptBlocks() - overlap.blocks(), 0);
    int free = Math.max(load.kvBlocksTotal() - cachedBlocks, 0);
    return evictionWeight * reuse * Math.max(newBlocks - free, 0) * request.blockSize() * cost.perToken();
  }

  /** With an ITL target a step carrying this prefill would miss: every running stream waits it out. */
  private double stall(WorkerLoad load, PrefillCost cost, long uncached, long cached, int running, double prefill) {
    if (itlTargetSeconds <= 0 || running == 0) {
      return 0;
    }
    int budget = load.speed().maxBatchedTokens();
    long chunk = budget > 0 ? Math.min(budget, uncached) : uncached;
    double step = cost.seconds(chunk, cached) + running * cost.perToken();
    return step > itlTargetSeconds ? running * prefill : 0;
  }

  /** The median measured prefill cost among the candidates, or {@link #NOMINAL} when none measured. */
  static PrefillCost fleetMedian(List<WorkerLoad> candidates) {
    List<PrefillCost> known = new java.util.ArrayList<>();
    for (WorkerLoad l : candidates) {
      if (l.speed().prefillCost().known()) {
        known.add(l.speed().prefillCost());
      }
    }
    if (known.isEmpty()) {
      return NOMINAL;
    }
    known.sort((a, b) -> Double.compare(a.seconds(512, 0), b.seconds(512, 0)));
    return known.get(known.size() / 2);
  }

  /** ⌈a / b⌉ for positive values, in floating point: a 64-bit division costs tens of cycles, once per candidate. */
  private static long ceilDiv(long a, long b) {
    return (long) Math.ceil((double) a / b);
  }
}
