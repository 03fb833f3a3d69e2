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
 * KV-aware selection: each candidate's overlap with the prompt (from the event-fed index, or, for
 * workers {@code useApproximate} names because no events arrive, from the router's own record of
 * what it sent them), costed by a {@link KvCost} — {@link PredictedTtftCost} (predicted seconds to
 * the first token, the default) or {@link BlockCost} (Dynamo's, in blocks). Temperature 0 picks the
 * minimum (ties: the worker the router sent fewer blocks, then random); temperature T samples
 * {@code p ∝ exp(−(c − c_min) / ((c_max − c_min) · T))}.
 *
 * <p>Thread-safe.
 */
public final class KvSelector implements WorkerSelector {
  /** The block cost's knobs, and the temperature. */
  public record Weights(double prefillLoadScale, double activeRequestWeight, double temperature) {
    public static Weights defaults() {
      return new Weights(1.0, 1.0, 0.0);
    }
  }

  private final PrefixIndex events;
  private final PrefixIndex approximate;
  private final Predicate<WorkerId> useApproximate;
  private final ToIntFunction<WorkerId> tieBreakBlocks;
  private final ToIntFunction<WorkerId> workingSetBlocks;
  private final KvCost cost;
  private final double temperature;

  /** The block cost with {@code weights}; {@code cachedBlocks} breaks ties and sizes working sets. */
  public KvSelector(
      PrefixIndex events,
      PrefixIndex approximate,
      Predicate<WorkerId> useApproximate,
      ToIntFunction<WorkerId> cachedBlocks,
      Weights weights) {
    this(events, approximate, useApproximate, cachedBlocks, cachedBlocks,
        new BlockCost(weights.prefillLoadScale(), weights.activeRequestWeight()), weights.temperature());
  }

  /**
   * @param tieBreakBlocks how many blocks the router sent a worker (breaks ties)
   * @param workingSetBlocks how many blocks a worker caches (its working set, for capacity)
   */
  public KvSelector(
      PrefixIndex events,
      PrefixIndex approximate,
      Predicate<WorkerId> useApproximate,
      ToIntFunction<WorkerId> tieBreakBlocks,
      ToIntFunction<WorkerId> workingSetBlocks,
      KvCost cost,
      double temperature) {
    this.events = events;
    this.approximate = approximate;
    this.useApproximate = useApproximate;
    this.tieBreakBlocks = tieBreakBlocks;
    this.workingSetBlocks = workingSetBlocks;
    this.cost = cost;
    this.temperature = temperature;
  }

  @Override
  public String name() {
    return "kv";
  }

  public KvCost kvCost() {
    return cost;
  }

  /** The cost of sending {@code request} to a worker with this load and overlap (alone among candidates). */
  public double cost(RoutingRequest request, WorkerLoad load, Overlap overlap) {
    return cost.costs(request, List.of(load), new Overlap[] {overlap}, new int[] {workingSetBlocks.applyAsInt(load.workerId())})[0];
  }

  @Override
  public Selection select(RoutingRequest request, List<WorkerLoad> candidates) {
    Map<WorkerId, Overlap> fromEvents = events.overlaps(request.blockHashes());
    Map<WorkerId, Overlap> fromRouting = null;
    int n = candidates.size();
    Overlap[] overlaps = new Overlap[n];
    int[] workingSets = new int[n];
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
      if (cost.needsWorkingSets()) {
        workingSets[i] = workingSetBlocks.applyAsInt(w);
      }
    }
    double[] costs = cost.costs(request, candidates, overlaps, workingSets);
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (double c : costs) {
      min = Math.min(min, c);
      max = Math.max(max, c);
    }
    RandomGenerator random = ThreadLocalRandom.current();
    int chosen;
    if (temperature <= 0 || max == min) {
      chosen = argmin(candidates, costs, min + Math.abs(min) * cost.tieTolerance(), random);
    } else {
      double[] p = new double[n];
      double sum = 0;
      for (int i = 0; i < n; i++) {
        p[i] = Math.exp(-(costs[i] - min) / ((max - min) * temperature));
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
    return new Selection(candidates.get(chosen).workerId(), overlaps[chosen], costs[chosen], cost.name());
  }

  /** The cheapest candidate among those costing at most {@code tie}: fewest blocks sent, then random. */
  private int argmin(List<WorkerLoad> candidates, double[] costs, double tie, RandomGenerator random) {
    int best = -1;
    int bestCached = 0;
    int ties = 0;
    for (int i = 0; i < costs.length; i++) {
      if (costs[i] > tie) {
        continue;
      }
      int cached = tieBreakBlocks.applyAsInt(candidates.get(i).workerId());
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
