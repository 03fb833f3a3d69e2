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
 */
public final class Profile {
  private final String model;
  private final String engine;
  private final long kvTokens;
  private final int maxNumSeqs;
  private final List<PrefillPoint> prefill;
  private final List<DecodePoint> decode;
  private final double[] prefillIsl; // ascending
  private final double[] prefillSeconds;
  private final double[] contexts; // ascending, the decode grid's contexts
  private final double[][] batches; // per context, ascending
  private final double[][] itls; // per context, per batch

  /** Seconds to prefill a prompt of {@code isl} tokens with nothing cached. */
  public record PrefillPoint(double isl, double seconds) {}

  /** Seconds between tokens with {@code batch} sequences of {@code context} tokens decoding. */
  public record DecodePoint(double batch, double context, double itlSeconds) {}

  public Profile(String model, String engine, long kvTokens, int maxNumSeqs, List<PrefillPoint> prefill, List<DecodePoint> decode) {
    if (prefill.isEmpty() || decode.isEmpty()) {
      throw new IllegalArgumentException("a profile needs at least one prefill and one decode point");
    }
    this.model = model;
    this.engine = engine;
    this.kvTokens = kvTokens;
    this.maxNumSeqs = maxNumSeqs;
    this.prefill = prefill.stream().sorted(Comparator.comparingDouble(PrefillPoint::isl)).toList();
    this.decode = List.copyOf(decode);
    this.prefillIsl = this.prefill.stream().mapToDouble(PrefillPoint::isl).toArray();
    this.prefillSeconds = this.prefill.stream().mapToDouble(PrefillPoint::seconds).toArray();
    TreeMap<Double, List<DecodePoint>> byContext = new TreeMap<>();
    for (DecodePoint p : decode) {
      byContext.computeIfAbsent(p.context(), c -> new ArrayList<>()).add(p);
    }
    int n = byContext.size();
    this.contexts = new double[n];
    this.batches = new double[n][];
    this.itls = new double[n][];
    int i = 0;
    for (var e : byContext.entrySet()) {
      List<DecodePoint> sorted = e.getValue().stream().sorted(Comparator.comparingDouble(DecodePoint::batch)).toList();
      contexts[i] = e.getKey();
      batches[i] = sorted.stream().mapToDouble(DecodePoint::batch).toArray();
      itls[i] = sorted.stream().mapToDouble(DecodePoint::itlSeconds).toArray();
      i++;
    }
  }

  public String model() {
    return model;
  }

  public String engine() {
    return engine;
  }

  /** KV capacity of one worker in tokens (bounds the decode batch). */
  public long kvTokens() {
    return kvTokens;
  }

  /** The most sequences one worker batches. */
  public int maxNumSeqs() {
    return maxNumSeqs;
  }

  public List<PrefillPoint> prefill() {
    return prefill;
  }

  public List<DecodePoint> decode() {
    return decode;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Profile p && model.equals(p.model) && engine.equals(p.engine) && kvTokens == p.kvTokens
        && maxNumSeqs == p.maxNumSeqs && prefill.equals(p.prefill) && decode.equals(p.decode);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(model, engine, kvTokens, maxNumSeqs, prefill, decode);
  }

  @Override
  public String toString() {
    return "Profile[" + model + ", " + engine + ", " + prefill.size() + " prefill and " + decode.size() + " decode points]";
  }

  /** Prefill seconds for {@code isl} new tokens: piecewise linear, extended along the end segments. */
  public double prefillSeconds(double isl) {
    return Math.max(1e-6, interpolate(prefillIsl, prefillSeconds, Math.max(0, isl)));
  }

  /** Prompt tokens per second one worker computes at prompts of {@code isl} tokens. */
  public double prefillTokensPerSecond(double isl) {
    double tokens = Math.max(1, isl);
    return tokens / prefillSeconds(tokens);
  }

  /**
   * Inter-token latency at {@code batch} sequences of {@code context} tokens: along batch within
   * each measured context, then between the two nearest contexts, both piecewise linear.
   */
  public double itl(double batch, double context) {
    int n = contexts.length;
    int hi = 0;
    while (hi < n - 1 && contexts[hi] < context) {
      hi++;
    }
    if (n == 1) {
      return Math.max(1e-6, interpolate(batches[0], itls[0], batch));
    }
    int lo = hi == 0 ? 0 : hi - 1;
    if (hi == lo) {
      hi = 1;
    }
    double a = interpolate(batches[lo], itls[lo], batch);
    double b = interpolate(batches[hi], itls[hi], batch);
    double t = (context - contexts[lo]) / (contexts[hi] - contexts[lo]);
    if (context < contexts[0]) {
      t = 0; // below the grid: the smallest context's figures
    }
    return Math.max(1e-6, a + t * (b - a));
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
