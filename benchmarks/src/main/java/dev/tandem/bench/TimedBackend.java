package dev.tandem.bench;

import dev.tandem.engine.compute.AttentionBatch;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.WeightMatrix;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A compute backend that times every kernel call of the backend it wraps: matmuls by the weight
 * they read (grouped by kind across layers, e.g. {@code q+k+v}, {@code down}, {@code lm_head}, and
 * by layer), the element-wise kernels and attention by name. What a decode step spends outside
 * the backend (embedding, residual adds, KV writes, sampling, scheduling) is the step's time minus
 * {@link #nanos()}. Two {@code System.nanoTime()} calls a kernel: ~250 kernels a token of a
 * 28-layer model cost well under 0.1% of its time.
 *
 * <p>Threading: called from the engine thread only, as any backend.
 */
final class TimedBackend implements ComputeBackend {
  private static final Pattern LAYER = Pattern.compile("layers\\.(\\d+)\\.");
  private static final Pattern KIND = Pattern.compile("(qkv|gate_up|q|k|v|o|gate|up|down)_proj");

  /** Time and bytes read of one kind of call. */
  static final class Tally {
    long nanos;
    long bytes;
    long calls;

    double gbPerSecond() {
      return nanos == 0 ? 0 : bytes / (double) nanos;
    }
  }

  private final ComputeBackend inner;
  private final Map<String, Tally> byKind = new LinkedHashMap<>();
  private final Map<Integer, Tally> matmulByLayer = new LinkedHashMap<>();
  private final Map<String, Tally> elementwise = new LinkedHashMap<>();
  private boolean counting;

  TimedBackend(ComputeBackend inner) {
    this.inner = inner;
  }

  @Override
  public String name() {
    return inner.name() + " (timed)";
  }

  @Override
  public void matmul(float[] x, int tokens, WeightMatrix w, float[] out) {
    long start = System.nanoTime();
    inner.matmul(x, tokens, w, out);
    countMatmul(new WeightMatrix[] {w}, System.nanoTime() - start);
  }

  @Override
  public void matmul(float[] x, int tokens, WeightMatrix[] ws, float[][] outs) {
    long start = System.nanoTime();
    inner.matmul(x, tokens, ws, outs);
    countMatmul(ws, System.nanoTime() - start);
  }

  private void countMatmul(WeightMatrix[] ws, long nanos) {
    if (!counting) {
      return;
    }
    List<String> kinds = new ArrayList<>();
    long bytes = 0;
    for (WeightMatrix w : ws) {
      String kind = kind(w.name());
      if (!kinds.contains(kind)) { // Phi-3's q, k, v: three views of one qkv_proj
        kinds.add(kind);
      }
      bytes += w.byteSize();
    }
    add(byKind.computeIfAbsent(String.join("+", kinds), k -> new Tally()), nanos, bytes);
    Matcher layer = LAYER.matcher(ws[0].name());
    if (layer.find()) {
      add(matmulByLayer.computeIfAbsent(Integer.parseInt(layer.group(1)), k -> new Tally()), nanos, bytes);
    }
  }

  private static String kind(String weightName) {
    Matcher m = KIND.matcher(weightName);
    if (m.find()) {
      return m.group(1);
    }
    return weightName.contains("lm_head") || weightName.contains("embed") ? "lm_head" : weightName;
  }

  private static void add(Tally t, long nanos, long bytes) {
    t.nanos += nanos;
    t.bytes += bytes;
    t.calls++;
  }

  private void timed(String name, Runnable kernel) {
    long start = System.nanoTime();
    kernel.run();
    if (counting) {
      add(elementwise.computeIfAbsent(name, k -> new Tally()), System.nanoTime() - start, 0);
    }
  }

  @Override
  public void rmsNorm(float[] x, float[] out, float[] weight, float eps, int rows, int dim) {
    timed("rms_norm", () -> inner.rmsNorm(x, out, weight, eps, rows, dim));
  }

  @Override
  public void streamsWeightsPerStep(long bytes) {
    inner.streamsWeightsPerStep(bytes);
  }

  @Override
  public void rope(float[] x, int rows, int heads, int headDim, int[] positions, float[] invFreq, float scale) {
    timed("rope", () -> inner.rope(x, rows, heads, headDim, positions, invFreq, scale));
  }

  @Override
  public void siluMul(float[] gate, float[] up, int n) {
    timed("silu_mul", () -> inner.siluMul(gate, up, n));
  }

  @Override
  public void geluTanhMul(float[] gate, float[] up, int n) {
    timed("gelu_tanh_mul", () -> inner.geluTanhMul(gate, up, n));
  }

  @Override
  public void attention(AttentionBatch batch) {
    timed("attention", () -> inner.attention(batch));
  }

  /** Everything timed so far. */
  long nanos() {
    long n = 0;
    for (Tally t : byKind.values()) {
      n += t.nanos;
    }
    for (Tally t : elementwise.values()) {
      n += t.nanos;
    }
    return n;
  }

  /** Forgets what was timed so far and counts from now on. */
  void start() {
    byKind.clear();
    matmulByLayer.clear();
    elementwise.clear();
    counting = true;
  }

  /** Stops counting (kernels still run). */
  void stop() {
    counting = false;
  }

  /**
   * The breakdown of {@code steps} decode steps that took {@code stepNanos} in all, one line a
   * kind: milliseconds per token, share of the step, and the bytes/s of the matmuls.
   */
  List<String> report(long stepNanos, int steps) {
    List<String> lines = new ArrayList<>();
    long matmulNanos = 0;
    long matmulBytes = 0;
    for (Map.Entry<String, Tally> e : byKind.entrySet()) {
      Tally t = e.getValue();
      matmulNanos += t.nanos;
      matmulBytes += t.bytes;
      lines.add(line("matmul " + e.getKey(), t.nanos, stepNanos, steps)
          + String.format(Locale.ROOT, "  %6.1f GB/s", t.gbPerSecond()));
    }
    lines.add(line("matmul, all", matmulNanos, stepNanos, steps)
        + String.format(Locale.ROOT, "  %6.1f GB/s", matmulNanos == 0 ? 0 : matmulBytes / (double) matmulNanos));
    for (Map.Entry<String, Tally> e : elementwise.entrySet()) {
      lines.add(line(e.getKey(), e.getValue().nanos, stepNanos, steps));
    }
    lines.add(line("outside the kernels", stepNanos - nanos(), stepNanos, steps));
    if (!matmulByLayer.isEmpty()) {
      double min = Double.MAX_VALUE;
      double max = 0;
      int slowest = -1;
      for (Map.Entry<Integer, Tally> e : matmulByLayer.entrySet()) {
        double gbs = e.getValue().gbPerSecond();
        if (gbs < min) {
          min = gbs;
          slowest = e.getKey();
        }
        max = Math.max(max, gbs);
      }
      lines.add(String.format(Locale.ROOT, "matmul GB/s per layer: %.1f (layer %d) to %.1f over %d layers",
          min, slowest, max, matmulByLayer.size()));
    }
    return lines;
  }

  private static String line(String what, long nanos, long stepNanos, int steps) {
    return String.format(Locale.ROOT, "%-24s %8.2f ms/token  %5.1f%%", what, nanos / 1e6 / steps, 100.0 * nanos / stepNanos);
  }

  @Override
  public void close() {
    inner.close();
  }
}
