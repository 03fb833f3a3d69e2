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
  /** Weight of one decision in {@link #reuse()}: an average over about the last 32. */
  private static final double REUSE_ALPHA = 1.0 / 32;
  /** {@link #reuse()}'s bits, updated atomically by every decision (decisions may run concurrently). */
  private final java.util.concurrent.atomic.AtomicLong reuseBits = new java.util.concurrent.atomic.AtomicLong(Double.doubleToRawLongBits(1.0));
  private final ToIntFunction<WorkerId> tieBreakBlocks;
  private final ToIntFunction<WorkerId> workingSetBlocks;
  private final KvCost cost;
  private final double temperature;
  /** Breaks ties and samples; null: each thread's own {@link ThreadLocalRandom}. */
  private final RandomGenerator random;

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
    this(events, approximate, useApproximate, tieBreakBlocks, workingSetBlocks, cost, temperature, null);
  }

  private KvSelector(PrefixIndex events, PrefixIndex approximate, Predicate<WorkerId> useApproximate,
      ToIntFunction<WorkerId> tieBreakBlocks, ToIntFunction<WorkerId> workingSetBlocks, KvCost cost, double temperature,
      RandomGenerator random) {
    this.events = events;
    this.approximate = approximate;
    this.useApproximate = useApproximate;
    this.tieBreakBlocks = tieBreakBlocks;
    this.workingSetBlocks = workingSetBlocks;
    this.cost = cost;
    this.temperature = temperature;
    this.random = random;
  }

  /**
   * The same selector drawing its ties and samples from {@code random} (one thread at a time: a
   * simulator's, so that a run repeats exactly) instead of each thread's own generator.
   */
  public KvSelector withRandom(RandomGenerator random) {
    return new KvSelector(events, approximate, useApproximate, tieBreakBlocks, workingSetBlocks, cost, temperature, random);
  }

  private RandomGenerator random() {
    return random != null ? random : ThreadLocalRandom.current();
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
    return cost.withReuse(reuse()).scorer(request, List.of(load)).cost(0, overlap, workingSetBlocks.applyAsInt(load.workerId()));
  }

  /**
   * The share of recent prompts' full blocks found cached somewhere in the pool (by events, or in
   * what the router sent): an average over about the last {@code 1 / REUSE_ALPHA} decisions,
   * starting at 1 (until prompts show otherwise, an evicted block counts as one to be asked for
   * again).
   */
  public double reuse() {
    return Double.longBitsToDouble(reuseBits.get());
  }

  /** Adds this prompt's deepest cached prefix anywhere (a share of its full blocks) to {@link #reuse()}. */
  private void observeReuse(RoutingRequest request, Map<WorkerId, Overlap> fromEvents, Map<WorkerId, Overlap> fromRouting) {
    int full = request.blockHashes().length;
    if (full == 0) {
      return;
    }
    int deepest = 0;
    for (Overlap o : fromEvents.values()) {
      deepest = Math.max(deepest, o.blocks());
    }
    if (fromRouting != null) {
      for (Overlap o : fromRouting.values()) {
        deepest = Math.max(deepest, o.blocks());
      }
    }
    double seen = Math.min(1.0, (double) deepest / full);
    reuseBits.getAndUpdate(bits -> {
      double r = Double.longBitsToDouble(bits);
      return Double.doubleToRawLongBits(r + REUSE_ALPHA * (seen - r));
    });
  }

  @Override
  public Selection select(RoutingRequest request, List<WorkerLoad> candidates) {
    return select(request, candidates, events.overlaps(request.blockHashes()));
  }

  /** {@link #select(RoutingRequest, List)} with the event index's overlaps for this prompt already looked up. */
  public Selection select(RoutingRequest request, List<WorkerLoad> candidates, Map<WorkerId, Overlap> fromEvents) {
    Overlaps overlaps = new Overlaps(request, fromEvents);
    KvCost.Scorer scorer = cost.withReuse(reuse()).scorer(request, candidates);
    Selection chosen = temperature <= 0 ? cheapest(scorer, candidates, overlaps) : sample(scorer, candidates, overlaps);
    observeReuse(request, fromEvents, overlaps.fromRouting != null ? overlaps.fromRouting : approximate.overlaps(request.blockHashes()));
    return chosen;
  }

  /**
   * The same choice as {@link #select(RoutingRequest, List)} over the workers of {@code fleet} that
   * {@code eligible} accepts, pricing only those that can win: the workers holding part of the
   * prompt, then the rest in order of load while a worker's load key plus the decision's floor
   * (a lower bound of its cost) is within the tie tolerance of the best cost found. At 1,000
   * workers that is a handful. With a temperature, or while some worker has no load key (a
   * worker that has not measured its prefill, under the seconds cost), every eligible worker is
   * priced.
   */
  public Selection select(RoutingRequest request, LoadOrder fleet, Predicate<WorkerId> eligible) {
    if (temperature > 0 || fleet.hasUnkeyed()) {
      List<WorkerLoad> all = fleet.loads().stream().filter(l -> eligible.test(l.workerId())).toList();
      if (all.isEmpty()) {
        throw new IllegalArgumentException("no eligible worker among the " + fleet.size() + " of the pool");
      }
      return select(request, all);
    }
    Map<WorkerId, Overlap> fromEvents = events.overlaps(request.blockHashes());
    Map<WorkerId, Overlap> fromRouting = approximate.overlaps(request.blockHashes());
    List<WorkerLoad> candidates = new java.util.ArrayList<>();
    KvCost.Scorer scorer = cost.withReuse(reuse()).scorer(request, candidates); // reads candidates as they are added
    observeReuse(request, fromEvents, fromRouting);
    Priced priced = new Priced(8);
    java.util.Set<WorkerId> holding = new java.util.HashSet<>();
    double min = Double.POSITIVE_INFINITY;
    for (int source = 0; source < 2; source++) {
      for (Map.Entry<WorkerId, Overlap> e : (source == 0 ? fromEvents : fromRouting).entrySet()) {
        WorkerId w = e.getKey();
        WorkerLoad load = fleet.get(w);
        if (load == null || useApproximate.test(w) != (source == 1) || !eligible.test(w) || e.getValue().blocks() == 0) {
          continue;
        }
        candidates.add(load);
        int i = candidates.size() - 1;
        double c = scorer.cost(i, e.getValue(), workingSet(load));
        priced.add(i, c, e.getValue());
        holding.add(w);
        min = Math.min(min, c);
      }
    }
    double tolerance = cost.tieTolerance();
    double threshold = min + Math.abs(min) * tolerance;
    double floor = scorer.loadKeyFloor(fleet);
    for (var it = fleet.ascending(); it.hasNext(); ) {
      LoadOrder.Entry e = it.next();
      if (e.key() + floor > threshold) {
        break; // this worker's bound, and every later one's, exceeds what can still win
      }
      WorkerId w = e.load().workerId();
      if (holding.contains(w) || !eligible.test(w)) {
        continue;
      }
      candidates.add(e.load());
      int i = candidates.size() - 1;
      if (scorer.lowerBoundWithoutOverlap(i) > threshold) { // its own bound, tighter than the order's
        candidates.remove(i);
        continue;
      }
      double c = scorer.cost(i, Overlap.NONE, workingSet(e.load()));
      priced.add(i, c, Overlap.NONE);
      if (c < min) {
        min = c;
        threshold = min + Math.abs(min) * tolerance;
      }
    }
    if (priced.size == 0) {
      throw new IllegalArgumentException("no eligible worker among the " + fleet.size() + " of the pool");
    }
    int best = argmin(candidates, priced, min + Math.abs(min) * tolerance, random());
    return selection(scorer, candidates, priced.index[best], priced.cost[best], priced.overlap[best]);
  }

  /** Each candidate's overlap: from the event index, or from the router's own record for those {@code useApproximate} names. */
  private final class Overlaps {
    private final RoutingRequest request;
    private final Map<WorkerId, Overlap> fromEvents;
    private Map<WorkerId, Overlap> fromRouting;

    Overlaps(RoutingRequest request, Map<WorkerId, Overlap> fromEvents) {
      this.request = request;
      this.fromEvents = fromEvents;
    }

    Overlap of(WorkerId w) {
      if (useApproximate.test(w)) {
        if (fromRouting == null) {
          fromRouting = approximate.overlaps(request.blockHashes());
        }
        return fromRouting.getOrDefault(w, Overlap.NONE);
      }
      return fromEvents.isEmpty() ? Overlap.NONE : fromEvents.getOrDefault(w, Overlap.NONE);
    }
  }

  /** Temperature T: samples {@code p ∝ exp(−(c − c_min) / ((c_max − c_min) · T))} over every candidate's cost. */
  private Selection sample(KvCost.Scorer scorer, List<WorkerLoad> candidates, Overlaps overlapsOf) {
    int n = candidates.size();
    Overlap[] overlaps = new Overlap[n];
    double[] costs = new double[n];
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      overlaps[i] = overlapsOf.of(candidates.get(i).workerId());
      costs[i] = scorer.cost(i, overlaps[i], workingSet(candidates.get(i)));
      min = Math.min(min, costs[i]);
      max = Math.max(max, costs[i]);
    }
    RandomGenerator random = random();
    int chosen;
    if (max == min) {
      Priced all = new Priced(n);
      for (int i = 0; i < n; i++) {
        all.add(i, costs[i], overlaps[i]);
      }
      chosen = all.index[argmin(candidates, all, min + Math.abs(min) * cost.tieTolerance(), random)];
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
    return selection(scorer, candidates, chosen, costs[chosen], overlaps[chosen]);
  }

  /**
   * Temperature 0: the cheapest candidate, pricing only those that can be the cheapest or tie with
   * it. Those holding part of the prompt are priced; of the rest (most of a large fleet), only
   * those whose lower bound is within the tie tolerance of the best cost found so far. A skipped
   * candidate's bound exceeded a threshold that only falls, so it cannot tie the final minimum: the
   * choice is the one pricing every candidate would make. One pass over the candidates computes
   * the bounds; the second reads only that array.
   */
  private Selection cheapest(KvCost.Scorer scorer, List<WorkerLoad> candidates, Overlaps overlapsOf) {
    int n = candidates.size();
    double[] bounds = new double[n];
    Priced priced = new Priced(8);
    double min = Double.POSITIVE_INFINITY;
    int lowest = -1;
    for (int i = 0; i < n; i++) {
      WorkerLoad load = candidates.get(i);
      Overlap overlap = overlapsOf.of(load.workerId());
      if (overlap.blocks() > 0) {
        double c = scorer.cost(i, overlap, workingSet(load));
        priced.add(i, c, overlap);
        min = Math.min(min, c);
        bounds[i] = Double.NaN;
      } else {
        bounds[i] = scorer.lowerBoundWithoutOverlap(i);
        if (lowest < 0 || bounds[i] < bounds[lowest]) {
          lowest = i;
        }
      }
    }
    if (lowest >= 0) {
      double c = scorer.cost(lowest, Overlap.NONE, workingSet(candidates.get(lowest)));
      priced.add(lowest, c, Overlap.NONE);
      min = Math.min(min, c);
    }
    double tolerance = cost.tieTolerance();
    double threshold = min + Math.abs(min) * tolerance;
    for (int i = 0; i < n; i++) {
      if (bounds[i] <= threshold && i != lowest) { // NaN (already priced) compares false
        double c = scorer.cost(i, Overlap.NONE, workingSet(candidates.get(i)));
        priced.add(i, c, Overlap.NONE);
        if (c < min) {
          min = c;
          threshold = min + Math.abs(min) * tolerance;
        }
      }
    }
    int best = argmin(candidates, priced, min + Math.abs(min) * tolerance, random());
    return selection(scorer, candidates, priced.index[best], priced.cost[best], priced.overlap[best]);
  }

  private Selection selection(KvCost.Scorer scorer, List<WorkerLoad> candidates, int chosen, double cost, Overlap overlap) {
    return new Selection(candidates.get(chosen).workerId(), overlap, cost, this.cost.name(),
        scorer.othersCost(chosen, overlap, workingSet(candidates.get(chosen))));
  }

  /** The candidates a decision priced: their positions, costs and overlaps. */
  private static final class Priced {
    int[] index;
    double[] cost;
    Overlap[] overlap;
    int size;

    Priced(int capacity) {
      index = new int[capacity];
      cost = new double[capacity];
      overlap = new Overlap[capacity];
    }

    void add(int i, double c, Overlap o) {
      if (size == index.length) {
        index = java.util.Arrays.copyOf(index, size * 2);
        cost = java.util.Arrays.copyOf(cost, size * 2);
        overlap = java.util.Arrays.copyOf(overlap, size * 2);
      }
      index[size] = i;
      cost[size] = c;
      overlap[size] = o;
      size++;
    }
  }

  private int workingSet(WorkerLoad load) {
    return cost.needsWorkingSets() ? workingSetBlocks.applyAsInt(load.workerId()) : 0;
  }

  /** Of the priced candidates costing at most {@code tie}, the one the router sent fewest blocks, then random; a position in {@code priced}. */
  private int argmin(List<WorkerLoad> candidates, Priced priced, double tie, RandomGenerator random) {
    int best = -1;
    int bestCached = 0;
    int ties = 0;
    for (int k = 0; k < priced.size; k++) {
      if (!(priced.cost[k] <= tie)) {
        continue;
      }
      int cached = tieBreakBlocks.applyAsInt(candidates.get(priced.index[k]).workerId());
      if (best < 0 || cached < bestCached) {
        best = k;
        bestCached = cached;
        ties = 1;
      } else if (cached == bestCached && random.nextInt(++ties) == 0) {
        best = k; // reservoir sampling over equal candidates
      }
    }
    return best;
  }
}
