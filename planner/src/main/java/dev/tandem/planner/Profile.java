package dev.tandem.planner;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeMap;

/**
 * A worker's measured speed, as {@code tandem profile} writes it: prefill seconds at each prompt
 * length (one request alone), and decode inter-token latency at each (batch, context) of a grid.
 * SLA mode reads it to turn a forecast into replicas; the simulator times its workers with it.
 *
 * @param model the model the profile was measured with (the planner refuses another)
 * @param engine the engine ({@code builtin}, {@code mocker})
 * @param kvTokens KV capacity of one worker in tokens (bounds the decode batch)
 * @param maxNumSeqs the most sequences one worker batches
 */
public record Profile(
    String model, String engine, long kvTokens, int maxNumSeqs, List<PrefillPoint> prefill, List<DecodePoint> decode) {

  /** Seconds to prefill a prompt of {@code isl} tokens with nothing cached. */
  public record PrefillPoint(double isl, double seconds) {}

  /** Seconds between tokens with {@code batch} sequences of {@code context} tokens decoding. */
  public record DecodePoint(double batch, double context, double itlSeconds) {}

  public Profile {
    prefill = prefill.stream().sorted(Comparator.comparingDouble(PrefillPoint::isl)).toList();
    decode = List.copyOf(decode);
    if (prefill.isEmpty() || decode.isEmpty()) {
      throw new IllegalArgumentException("a profile needs at least one prefill and one decode point");
    }
  }

  /** Prefill seconds for {@code isl} new tokens: piecewise linear, extended along the end segments. */
  public double prefillSeconds(double isl) {
    double[] x = prefill.stream().mapToDouble(PrefillPoint::isl).toArray();
    double[] y = prefill.stream().mapToDouble(PrefillPoint::seconds).toArray();
    return Math.max(1e-6, interpolate(x, y, Math.max(0, isl)));
  }

  /** Prompt tokens per second one worker computes at prompts of {@code isl} tokens. */
  public double prefillTokensPerSecond(double isl) {
    double tokens = Math.max(1, isl);
    return tokens / prefillSeconds(tokens);
  }

  /**
   * Prompt tokens per second one worker sustains while keeping time to first token within {@code
   * ttftTarget}: with service time {@code s} and utilisation ρ a queued request waits about {@code
   * ρ·s/(1−ρ)} (M/M/1, a cautious stand-in for p90 of a nearly deterministic server), so ρ may go
   * up to {@code 1 − s/target} (kept within [0.05, 0.95]).
   */
  public double prefillThroughputWithin(double isl, double ttftTarget) {
    double s = prefillSeconds(Math.max(1, isl));
    double rho = Math.max(0.05, Math.min(0.95, 1 - s / ttftTarget));
    return rho * prefillTokensPerSecond(isl);
  }

  /** Expected TTFT at prompts of {@code isl} tokens and prefill utilisation {@code rho}. */
  public double expectedTtft(double isl, double rho) {
    double s = prefillSeconds(Math.max(1, isl));
    double r = Math.max(0, Math.min(0.95, rho));
    return s / (1 - r);
  }

  /**
   * Inter-token latency at {@code batch} sequences of {@code context} tokens: along batch within
   * each measured context, then between the two nearest contexts, both piecewise linear.
   */
  public double itl(double batch, double context) {
    TreeMap<Double, List<DecodePoint>> byContext = new TreeMap<>();
    for (DecodePoint p : decode) {
      byContext.computeIfAbsent(p.context(), c -> new ArrayList<>()).add(p);
    }
    Double lo = byContext.floorKey(context);
    Double hi = byContext.ceilingKey(context);
    if (lo == null) {
      lo = hi;
    }
    if (hi == null) {
      hi = lo;
    }
    double a = itlAlongBatch(byContext.get(lo), batch);
    if (lo.equals(hi)) {
      if (context > hi && byContext.size() > 1) { // extend along the last two contexts
        Double below = byContext.lowerKey(hi);
        double b = itlAlongBatch(byContext.get(below), batch);
        return Math.max(1e-6, a + (a - b) * (context - hi) / (hi - below));
      }
      return Math.max(1e-6, a);
    }
    double b = itlAlongBatch(byContext.get(hi), batch);
    return Math.max(1e-6, a + (b - a) * (context - lo) / (hi - lo));
  }

  private static double itlAlongBatch(List<DecodePoint> points, double batch) {
    List<DecodePoint> sorted = points.stream().sorted(Comparator.comparingDouble(DecodePoint::batch)).toList();
    double[] x = sorted.stream().mapToDouble(DecodePoint::batch).toArray();
    double[] y = sorted.stream().mapToDouble(DecodePoint::itlSeconds).toArray();
    return interpolate(x, y, batch);
  }

  /** The most sequences of {@code context} tokens one worker can hold: batching limit and KV. */
  public int maxBatch(double context) {
    long byKv = context <= 0 ? maxNumSeqs : (long) (kvTokens / Math.max(1, context));
    return (int) Math.max(1, Math.min(maxNumSeqs, byKv));
  }

  /** The largest batch at {@code context} whose ITL stays within {@code itlTarget} (1 if none does). */
  public int batchWithin(double context, double itlTarget) {
    int best = 1;
    int max = maxBatch(context);
    for (int b = 1; b <= max; b++) {
      if (itl(b, context) <= itlTarget) {
        best = b;
      } else if (b > 1) {
        break;
      }
    }
    return best;
  }

  /** Output tokens per second one worker sustains at {@code context} within {@code itlTarget}. */
  public double decodeThroughputWithin(double context, double itlTarget) {
    int b = batchWithin(context, itlTarget);
    return b / itl(b, context);
  }

  /** Piecewise linear through (x, y), x ascending, extended along the first and last segments. */
  static double interpolate(double[] x, double[] y, double at) {
    int n = x.length;
    if (n == 1) {
      return y[0] * (x[0] > 0 ? at / x[0] : 1); // one point: proportional
    }
    int i = 1;
    while (i < n - 1 && at > x[i]) {
      i++;
    }
    double x0 = x[i - 1], x1 = x[i];
    double t = x1 == x0 ? 0 : (at - x0) / (x1 - x0);
    return y[i - 1] + t * (y[i] - y[i - 1]);
  }
}
