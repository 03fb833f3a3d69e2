package dev.tandem.planner.live;

import dev.tandem.planner.HistogramQuantile;
import dev.tandem.planner.IntervalStats;
import dev.tandem.planner.LengthMix;
import dev.tandem.planner.Pool;
import dev.tandem.planner.PoolLoad;
import java.util.Map;
import java.util.TreeMap;

/**
 * Turns two scrapes {@code seconds} apart into the planner's {@link IntervalStats}: arrivals =
 * requests finished in between plus the change in requests in flight; mean lengths and hit rate
 * from the token counters; p90 TTFT and ITL from the histograms' bucket differences (linear within
 * a bucket); the uncached prompt lengths from their histogram's (each bucket at its middle); pools from the workers the routers see, plus those the connector is still starting.
 */
public final class IntervalMeasurement {
  private IntervalMeasurement() {}

  public static IntervalStats between(FrontendSnapshot before, FrontendSnapshot after, double seconds,
      Map<Pool, Integer> starting) {
    double finished = Math.max(0, after.finished() - before.finished());
    double arrivals = Math.max(0, finished + after.inflight() - before.inflight());
    double prompt = after.promptTokens() - before.promptTokens();
    double output = after.outputTokens() - before.outputTokens();
    double cached = after.cachedTokens() - before.cachedTokens();
    double isl = finished > 0 ? prompt / finished : Double.NaN;
    double osl = finished > 0 ? output / finished : Double.NaN;
    double hit = prompt > 0 ? cached / prompt : Double.NaN;
    return new IntervalStats(seconds, arrivals, isl, osl, hit, quantile(before.ttftBuckets(), after.ttftBuckets(), 0.9),
        quantile(before.itlBuckets(), after.itlBuckets(), 0.9), after.waiting(),
        pool(after, Pool.PREFILL, starting.getOrDefault(Pool.PREFILL, 0)),
        pool(after, Pool.DECODE, starting.getOrDefault(Pool.DECODE, 0)),
        LengthMix.between(before.uncachedPromptBuckets(), after.uncachedPromptBuckets()));
  }

  private static PoolLoad pool(FrontendSnapshot s, Pool pool, int starting) {
    int ready = 0;
    double queued = 0, active = 0, kv = 0;
    for (FrontendSnapshot.WorkerView w : s.workers().values()) {
      if (w.pool() != pool) {
        continue;
      }
      if (w.serving()) {
        ready++;
        kv += w.kvTotal() > 0 ? w.kvUsed() / w.kvTotal() : 0;
      }
      queued += w.queuedTokens();
      active += w.active() + w.waiting();
    }
    return new PoolLoad(ready, starting, queued, ready == 0 ? 0 : kv / ready, active);
  }

  /** The q-quantile of the observations between two cumulative histograms; NaN with none. */
  static double quantile(TreeMap<Double, Double> before, TreeMap<Double, Double> after, double q) {
    Double total = after.get(Double.POSITIVE_INFINITY);
    if (total == null || total - before.getOrDefault(Double.POSITIVE_INFINITY, 0.0) <= 0) {
      return Double.NaN;
    }
    var upToInf = after.headMap(Double.POSITIVE_INFINITY, true); // +Inf last: its count is the total
    double[] le = new double[upToInf.size()];
    double[] cumulative = new double[upToInf.size()];
    int n = 0;
    for (var e : upToInf.entrySet()) {
      le[n] = e.getKey();
      cumulative[n++] = e.getValue() - before.getOrDefault(e.getKey(), 0.0);
    }
    return HistogramQuantile.of(le, cumulative, n, q);
  }

}
