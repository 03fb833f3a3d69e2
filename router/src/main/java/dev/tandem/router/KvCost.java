package dev.tandem.router;

import dev.tandem.router.index.Overlap;
import java.util.List;

/**
 * What a KV-aware choice minimises, per candidate worker: {@link BlockCost} (Dynamo's, in blocks)
 * or {@link PredictedTtftCost} (the default, in predicted seconds to the first token). Plain
 * values in and out.
 */
public interface KvCost {
  /** {@code blocks} or {@code seconds}, as {@code --router-cost} names it. */
  String name();

  /**
   * Costs one decision's candidates one at a time, with whatever the decision shares (a fleet
   * median, say) computed once when it is made.
   */
  interface Scorer {
    /**
     * The cost of candidate {@code i} holding {@code overlap} of the prompt and caching {@code
     * cachedBlocks} blocks in all (its working set); lower is better, never negative.
     */
    double cost(int i, Overlap overlap, int cachedBlocks);

    /**
     * At most {@code cost(i, Overlap.NONE, b)} for every {@code b}: cheap, and reads no working
     * set, so that a decision over many workers prices only those that might win.
     */
    double lowerBoundWithoutOverlap(int i);

    /**
     * The part of {@code cost(i, overlap, cachedBlocks)} that is the slowdown this request imposes
     * on the streams decoding there rather than its own wait (0 when the cost has no such term).
     */
    default double othersCost(int i, Overlap overlap, int cachedBlocks) {
      return 0;
    }

    /**
     * For a decision over a {@link LoadOrder}: a floor such that {@code
     * lowerBoundWithoutOverlap} of any ordered worker is at least its {@link KvCost#loadKey} plus
     * this ({@code order} gives the fleet's minimum measured speeds).
     */
    default double loadKeyFloor(LoadOrder order) {
      return Double.NEGATIVE_INFINITY;
    }
  }

  /** A scorer for one decision among {@code candidates}. */
  Scorer scorer(RoutingRequest request, List<WorkerLoad> candidates);

  /** One cost per candidate: {@code overlaps[i]} is what candidate {@code i} holds of the prompt, {@code cachedBlocks[i]} its working set. */
  default double[] costs(RoutingRequest request, List<WorkerLoad> candidates, Overlap[] overlaps, int[] cachedBlocks) {
    Scorer scorer = scorer(request, candidates);
    double[] c = new double[candidates.size()];
    for (int i = 0; i < c.length; i++) {
      c[i] = scorer.cost(i, overlaps[i], cachedBlocks[i]);
    }
    return c;
  }

  /**
   * Costs within this fraction of the minimum count as a tie (broken towards the worker the router
   * sent fewer blocks): a measured cost carries measurement noise, and two equally fast workers
   * must not look different because one's fit came out a few percent lower.
   */
  default double tieTolerance() {
    return 0;
  }

  /**
   * A number per worker, independent of any request, that orders a lower bound of its cost (see
   * {@link Scorer#loadKeyFloor}); NaN where there is none (the worker is then priced in every
   * decision over a {@link LoadOrder}).
   */
  default double loadKey(WorkerLoad load, int blockSize) {
    return Double.NaN;
  }

  /**
   * This cost where a share {@code share} (0–1) of recent prompts' blocks was found cached
   * somewhere in the pool: how likely blocks that a placement evicts are to be asked for again.
   * Costs without an eviction term ignore it.
   */
  default KvCost withReuse(double share) {
    return this;
  }

  /** Whether the cost reads {@code cachedBlocks} (the selector skips counting them otherwise). */
  default boolean needsWorkingSets() {
    return false;
  }
}
