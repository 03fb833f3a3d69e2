package dev.tandem.router;

import dev.tandem.router.index.Overlap;
import java.util.List;

/**
 * Dynamo's cost, in blocks (DESIGN.md):
 *
 * <pre>
 * cost   = prefill_load_scale × max(prefill_blocks − credit, 0) + decode_blocks + active_request_weight × active_requests
 * credit = device overlap + 0.75 × host overlap + 0.25 × disk overlap
 * </pre>
 *
 * where prefill_blocks are the request's prompt blocks plus the prefill blocks the router still has
 * in flight on that worker, and decode_blocks the worker's in-flight decode blocks plus the
 * request's, as this router tracks them (exact and immediate). Of what workers report, only the
 * requests waiting in their queue count (added to active requests): reports lag by up to their
 * interval, and using reported blocks in use sent a prefix family away from the worker that had
 * just finished its previous request (KvRoutingTest caught it). It weighs blocks of compute against
 * blocks of memory in one unit, so the best {@code prefill_load_scale} depends on the workload.
 */
public record BlockCost(double prefillLoadScale, double activeRequestWeight) implements KvCost {
  @Override
  public String name() {
    return "blocks";
  }

  /** The request-independent part of the cost: in-flight prefill and decode blocks, active requests. */
  @Override
  public double loadKey(WorkerLoad load, int blockSize) {
    return prefillLoadScale * load.routedPrefillBlocks() + load.routedDecodeBlocks()
        + activeRequestWeight * (load.routedActiveRequests() + load.reportedWaitingRequests());
  }

  /** The cost of sending {@code request} to a worker with this load and overlap. */
  public double cost(RoutingRequest request, WorkerLoad load, Overlap overlap) {
    int requestBlocks = request.promptBlocks();
    double prefill = Math.max(requestBlocks + load.routedPrefillBlocks() - overlap.credit(), 0);
    double decode = load.routedDecodeBlocks() + requestBlocks;
    int active = load.routedActiveRequests() + load.reportedWaitingRequests();
    return prefillLoadScale * prefill + decode + activeRequestWeight * active;
  }

  @Override
  public Scorer scorer(RoutingRequest request, List<WorkerLoad> candidates) {
    return new Scorer() {
      @Override
      public double cost(int i, Overlap overlap, int cachedBlocks) {
        return BlockCost.this.cost(request, candidates.get(i), overlap);
      }

      @Override
      public double lowerBoundWithoutOverlap(int i) {
        return BlockCost.this.cost(request, candidates.get(i), Overlap.NONE);
      }

      /** cost(NONE) = loadKey + (scale + 1) × prompt blocks, exactly. */
      @Override
      public double loadKeyFloor(LoadOrder order) {
        return (prefillLoadScale + 1) * request.promptBlocks();
      }
    };
  }
}
