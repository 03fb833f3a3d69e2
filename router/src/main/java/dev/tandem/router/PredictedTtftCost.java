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
 * prefill  = uncached × (per_token + per_context_token × (cached + uncached / 2))
 * decode   = ½ × step_seconds + steps × running × per_token, when streams are running: the rest
 *            of the step in progress (step_seconds is the worker's measured recent mean), then one
 *            decode token per running stream in each step this prompt's chunks share with them;
 *            steps = ⌈(queued + uncached) / (max_batched_tokens − running)⌉
 * evict    = eviction_weight × max(new_blocks − free_blocks, 0) × block_size × per_token
 *            the prefix blocks this placement pushes out must be recomputed by someone later
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
public record PredictedTtftCost(double itlTargetSeconds, double evictionWeight) implements KvCost {
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
  public double[] costs(RoutingRequest request, List<WorkerLoad> candidates, Overlap[] overlaps, int[] cachedBlocks) {
    PrefillCost fallback = null; // the fleet median, computed only if some candidate needs it
    double[] c = new double[candidates.size()];
    for (int i = 0; i < c.length; i++) {
      WorkerLoad load = candidates.get(i);
      if (fallback == null && !load.speed().prefillCost().known()) {
        fallback = fleetMedian(candidates);
      }
      c[i] = breakdown(request, load, overlaps[i], cachedBlocks[i], fallback).total();
    }
    return c;
  }

  /** The prediction for one candidate; {@code fallback} stands in for a cost it has not measured. */
  public Breakdown breakdown(RoutingRequest request, WorkerLoad load, Overlap overlap, int cachedBlocks, PrefillCost fallback) {
    PrefillCost cost = load.speed().prefillCost().known() ? load.speed().prefillCost() : fallback;
    int blockSize = request.blockSize();
    int prompt = request.promptTokens();
    long cached = Math.min((long) Math.floor(overlap.credit() * blockSize), Math.max(prompt - 1, 0));
    long uncached = prompt - cached;
    long queued = Math.max(load.speed().reportedQueuedPrefillTokens(), (long) load.routedPrefillBlocks() * blockSize);
    double queue = queued * cost.perToken();
    double prefill = cost.seconds(uncached, cached);
    int running = Math.max(load.routedActiveRequests(), load.reportedActiveRequests());
    int budget = load.speed().maxBatchedTokens();
    long steps = budget > running ? ceilDiv(queued + uncached, budget - running) : 1;
    double stepSeconds = load.speed().stepSeconds();
    double decode = running == 0 ? 0 : 0.5 * stepSeconds + steps * running * cost.perToken();
    int newBlocks = Math.max(request.promptBlocks() - overlap.blocks(), 0);
    int free = load.kvBlocksTotal() - cachedBlocks;
    double evict = load.kvBlocksTotal() > 0
        ? evictionWeight * Math.max(newBlocks - Math.max(free, 0), 0) * blockSize * cost.perToken()
        : 0;
    double stall = 0;
    if (itlTargetSeconds > 0 && running > 0) {
      long chunk = budget > 0 ? Math.min(budget, uncached) : uncached;
      double step = cost.seconds(chunk, cached) + running * cost.perToken();
      if (step > itlTargetSeconds) {
        stall = running * prefill;
      }
    }
    return new Breakdown(queue, prefill, decode, evict, stall);
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

  private static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }
}
