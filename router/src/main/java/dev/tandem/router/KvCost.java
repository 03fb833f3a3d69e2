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
   * One cost per candidate, lower is better; {@code overlaps[i]} is what candidate {@code i} holds
   * of the prompt, {@code cachedBlocks[i]} how many blocks it caches in all (its working set).
   */
  double[] costs(RoutingRequest request, List<WorkerLoad> candidates, Overlap[] overlaps, int[] cachedBlocks);

  /**
   * Costs within this fraction of the minimum count as a tie (broken towards the worker the router
   * sent fewer blocks): a measured cost carries measurement noise, and two equally fast workers
   * must not look different because one's fit came out a few percent lower.
   */
  default double tieTolerance() {
    return 0;
  }

  /** Whether {@link #costs} reads {@code cachedBlocks} (the selector skips counting them otherwise). */
  default boolean needsWorkingSets() {
    return false;
  }
}
