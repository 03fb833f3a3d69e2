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
 * {@code p ∝ exp(−(c − c_min) / ((c_max − c_min) · T))}. At temperature 0 a large fleet is priced
 * only where it can win: candidates holding part of the prompt, and the others whose cheap lower
 * bound ({@link KvCost.Scorer#lowerBoundWithoutOverlap}) comes within the tie tolerance.
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
    return cost.scorer(request, List.of(load)).cost(0, overlap, workingSetBlocks.applyAsInt(load.workerId()));
  }

  @Override
  public Selection select(RoutingRequest request, List<WorkerLoad> candidates) {
    Map<WorkerId, Overlap> fromEvents = events.overlaps(request.blockHashes());
    Map<WorkerId, Overlap> fromRouting = null;
    int n = candidates.size();
    Overlap[] overlaps = new Overlap[n];
    for (int i = 0; i < n; i++) {
      WorkerId w = candidates.get(i).workerId();
      if (useApproximate.test(w)) {
        if (fromRouting == null) {
          fromRouting = approximate.overlaps(request.blockHashes());
        }
        overlaps[i] = fromRouting.getOrDefault(w, Overlap.NONE);
      } else {
        overlaps[i] = fromEvents.getOrDefault(w, Overlap.NONE);
      }
    }
    KvCost.Scorer scorer = cost.scorer(request, candidates);
    double[] costs = temperature <= 0 ? cheapestCosts(scorer, candidates, overlaps) : allCosts(scorer, candidates, overlaps);
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (double c : costs) {
      if (!Double.isNaN(c)) {
        min = Math.min(min, c);
        max = Math.max(max, c);
      }
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
    return new Selection(candidates.get(chosen).workerId(), overlaps[chosen], costs[chosen], cost.name(),
        scorer.othersCost(chosen, overlaps[chosen], workingSet(candidates.get(chosen))));
  }

  /** Every candidate's cost (sampling at a temperature weighs them all). */
  private double[] allCosts(KvCost.Scorer scorer, List<WorkerLoad> candidates, Overlap[] overlaps) {
    double[] costs = new double[overlaps.length];
    for (int i = 0; i < costs.length; i++) {
      costs[i] = scorer.cost(i, overlaps[i], workingSet(candidates.get(i)));
    }
    return costs;
  }

  /**
   * The costs of every candidate that can be the cheapest or tie with it; NaN for the others. Those
   * holding part of the prompt are priced; of the rest (most of a large fleet), only those whose
   * lower bound is within the tie tolerance of the best cost found so far. A skipped candidate's
   * bound exceeded a threshold that only falls, so it cannot tie the final minimum: the choice is
   * the one pricing every candidate would make, at a fraction of the working-set reads and costs.
   */
  private double[] cheapestCosts(KvCost.Scorer scorer, List<WorkerLoad> candidates, Overlap[] overlaps) {
    int n = overlaps.length;
    double[] costs = new double[n];
    double[] bounds = new double[n];
    double min = Double.POSITIVE_INFINITY;
    int lowest = -1;
    for (int i = 0; i < n; i++) {
      if (overlaps[i].blocks() > 0) {
        costs[i] = scorer.cost(i, overlaps[i], workingSet(candidates.get(i)));
        min = Math.min(min, costs[i]);
        bounds[i] = Double.NaN;
      } else {
        costs[i] = Double.NaN;
        bounds[i] = scorer.lowerBoundWithoutOverlap(i);
        if (lowest < 0 || bounds[i] < bounds[lowest]) {
          lowest = i;
        }
      }
    }
    if (lowest >= 0) {
      costs[lowest] = scorer.cost(lowest, Overlap.NONE, workingSet(candidates.get(lowest)));
      min = Math.min(min, costs[lowest]);
    }
    double tolerance = cost.tieTolerance();
    double threshold = min + Math.abs(min) * tolerance;
    for (int i = 0; i < n; i++) {
      if (bounds[i] <= threshold && i != lowest) { // NaN (already priced) compares false
        costs[i] = scorer.cost(i, Overlap.NONE, workingSet(candidates.get(i)));
        if (costs[i] < min) {
          min = costs[i];
          threshold = min + Math.abs(min) * tolerance;
        }
      }
    }
    return costs;
  }

  private int workingSet(WorkerLoad load) {
    return cost.needsWorkingSets() ? workingSetBlocks.applyAsInt(load.workerId()) : 0;
  }

  /** The cheapest candidate among those costing at most {@code tie}: fewest blocks sent, then random. */
  private int argmin(List<WorkerLoad> candidates, double[] costs, double tie, RandomGenerator random) {
    int best = -1;
    int bestCached = 0;
    int ties = 0;
    for (int i = 0; i < costs.length; i++) {
      if (!(costs[i] <= tie)) { // NaN: not priced, cannot tie
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
