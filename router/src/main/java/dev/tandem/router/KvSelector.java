package dev.tandem.router;

import dev.tandem.common.WorkerId;
import dev.tandem.router.index.Overlap;
import dev.tandem.router.index.PrefixIndex;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Predicate;
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
 * request's. Temperature 0 picks the minimum (ties: fewer KV blocks in use, then random);
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

  public KvSelector(PrefixIndex events, PrefixIndex approximate, Predicate<WorkerId> useApproximate, Weights weights) {
    this.events = events;
    this.approximate = approximate;
    this.useApproximate = useApproximate;
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
    return weights.prefillLoadScale() * prefill + decode + weights.activeRequestWeight() * load.routedActiveRequests();
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

  private static int argmin(List<WorkerLoad> candidates, double[] costs, double min, RandomGenerator random) {
    int best = -1;
    int ties = 0;
    for (int i = 0; i < costs.length; i++) {
      if (costs[i] != min) {
        continue;
      }
      if (best < 0 || candidates.get(i).kvBlocksUsed() < candidates.get(best).kvBlocksUsed()) {
        best = i;
        ties = 1;
      } else if (candidates.get(i).kvBlocksUsed() == candidates.get(best).kvBlocksUsed()
          && random.nextInt(++ties) == 0) {
        best = i; // reservoir sampling over equal candidates
      }
    }
    return best;
  }
}
