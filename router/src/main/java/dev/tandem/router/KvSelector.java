package dev.tandem.router;

import dev.tandem.common.WorkerId;
import dev.tandem.router.index.Overlap;
import dev.tandem.router.index.PrefixIndex;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import java.util.random.RandomGenerator;

/**
 * KV-aware selection by cost (DESIGN.md, after Dynamo's current cost; lower is better):
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
 * just finished its previous request (KvRoutingTest caught it). Temperature 0 picks the minimum (ties: fewer KV blocks in use, then random);
 * temperature T samples p ∝ exp(−(c − c_min) / ((c_max − c_min) · T)).
 *
 * <p>Overlaps come from the event-fed index, except for workers {@code useApproximate} names (no
 * events arriving), which are scored from the router's own record of what it sent them.
 *
 * <p>Thread-safe.
 */
public final class KvSelector implements WorkerSelector {
  /** The cost's knobs. */
  public record Weights(double prefillLoadScale, double activeRequestWeight, double temperature) {
    public static Weights defaults() {
      return new Weights(1.0, 1.0, 0.0);
    }
  }

  private final PrefixIndex events;
  private final PrefixIndex approximate;
  private final Predicate<WorkerId> useApproximate;
  private final Weights weights;
  private final ToIntFunction<WorkerId> cachedBlocks;

  /**
   * @param cachedBlocks how many blocks a worker caches (breaks ties)
   */
  public KvSelector(
      PrefixIndex events,
      PrefixIndex approximate,
      Predicate<WorkerId> useApproximate,
      ToIntFunction<WorkerId> cachedBlocks,
      Weights weights) {
    this.events = events;
    this.approximate = approximate;
    this.useApproximate = useApproximate;
    this.cachedBlocks = cachedBlocks;
    this.weights = weights;
  }

  @Override
  public String name() {
    return "kv";
  }

  /** The cost of sending {@code request} to a worker with this load and overlap. */
  public double cost(RoutingRequest request, WorkerLoad load, Overlap overlap) {
    int requestBlocks = request.promptBlocks();
    double prefill = Math.max(requestBlocks + load.routedPrefillBlocks() - overlap.credit(), 0);
    double decode = load.routedDecodeBlocks() + requestBlocks;
    int active = load.routedActiveRequests() + load.reportedWaitingRequests();
    return weights.prefillLoadScale() * prefill + decode + weights.activeRequestWeight() * active;
  }

  @Override
  public Selection select(RoutingRequest request, List<WorkerLoad> candidates) {
    Map<WorkerId, Overlap> fromEvents = events.overlaps(request.blockHashes());
    Map<WorkerId, Overlap> fromRouting = null;
    int n = candidates.size();
    double[] costs = new double[n];
    Overlap[] overlaps = new Overlap[n];
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      WorkerId w = candidates.get(i).workerId();
      Overlap o;
      if (useApproximate.test(w)) {
        if (fromRouting == null) {
          fromRouting = approximate.overlaps(request.blockHashes());
        }
        o = fromRouting.getOrDefault(w, Overlap.NONE);
      } else {
        o = fromEvents.getOrDefault(w, Overlap.NONE);
      }
      overlaps[i] = o;
      costs[i] = cost(request, candidates.get(i), o);
      min = Math.min(min, costs[i]);
      max = Math.max(max, costs[i]);
    }
    RandomGenerator random = ThreadLocalRandom.current();
    int chosen;
    if (weights.temperature() <= 0 || max == min) {
      chosen = argmin(candidates, costs, min, random);
    } else {
      double[] p = new double[n];
      double sum = 0;
      for (int i = 0; i < n; i++) {
        p[i] = Math.exp(-(costs[i] - min) / ((max - min) * weights.temperature()));
        sum += p[i];
      }
      double r = random.nextDouble() * sum;
      chosen = n - 1;
      for (int i = 0; i < n; i++) {
        r -= p[i];
        if (r <= 0) {
          chosen = i;
          break;
        }
      }
    }
    return new Selection(candidates.get(chosen).workerId(), overlaps[chosen]);
  }

  private int argmin(List<WorkerLoad> candidates, double[] costs, double min, RandomGenerator random) {
    int best = -1;
    int bestCached = 0;
    int ties = 0;
    for (int i = 0; i < costs.length; i++) {
      if (costs[i] != min) {
        continue;
      }
      int cached = cachedBlocks.applyAsInt(candidates.get(i).workerId());
      if (best < 0 || cached < bestCached) {
        best = i;
        bestCached = cached;
        ties = 1;
      } else if (cached == bestCached && random.nextInt(++ties) == 0) {
        best = i; // reservoir sampling over equal candidates
      }
    }
    return best;
  }
}
