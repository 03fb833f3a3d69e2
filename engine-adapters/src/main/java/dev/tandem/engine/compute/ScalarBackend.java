package dev.tandem.engine.compute;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The reference backend: one thread, plain loops, sums in double. Slow and obviously right; every
 * fast backend is checked against it ({@code ComputeBackendConformanceTest}).
 */
public final class ScalarBackend implements ComputeBackend {

  @Override
  public String name() {
    return "scalar";
  }

  @Override
  public void matmul(float[] x, int tokens, WeightMatrix w, float[] out) {
    int rows = w.rows();
    int cols = w.cols();
    float[] row = new float[cols];
    for (int r = 0; r < rows; r++) {
      w.row(r, row, 0); // each weight read once, not once per token
      for (int t = 0; t < tokens; t++) {
        double sum = 0;
        for (int i = 0; i < cols; i++) {
          sum += (double) x[t * cols + i] * row[i];
        }
        out[t * rows + r] = (float) sum;
      }
    }
  }

  @Override
  public void rmsNorm(float[] x, float[] out, float[] weight, float eps, int rows, int dim) {
    for (int t = 0; t < rows; t++) {
      int base = t * dim;
      double ss = 0;
      for (int i = 0; i < dim; i++) {
        ss += (double) x[base + i] * x[base + i];
      }
      double inv = 1.0 / Math.sqrt(ss / dim + eps);
      for (int i = 0; i < dim; i++) {
        out[base + i] = (float) (x[base + i] * inv * weight[i]);
      }
    }
  }

  @Override
  public void rope(float[] x, int rows, int heads, int headDim, int[] positions, float[] invFreq, float scale) {
    int half = invFreq.length;
    for (int t = 0; t < rows; t++) {
      for (int h = 0; h < heads; h++) {
        int base = (t * heads + h) * headDim;
        for (int i = 0; i < half; i++) {
          double angle = (double) positions[t] * invFreq[i];
          double cos = Math.cos(angle) * scale;
          double sin = Math.sin(angle) * scale;
          double a = x[base + i];
          double b = x[base + i + half];
          x[base + i] = (float) (a * cos - b * sin);
          x[base + i + half] = (float) (b * cos + a * sin);
        }
      }
    }
  }

  @Override
  public void siluMul(float[] gate, float[] up, int n) {
    for (int i = 0; i < n; i++) {
      double g = gate[i];
      gate[i] = (float) (g / (1 + Math.exp(-g)) * up[i]);
    }
  }

  /**
   * The tanh formula itself; below 0, where 1 + tanh(u) cancels to nothing in double well before
   * the value underflows a float, as 2e^{2u} / (1 + e^{2u}), the same number.
   */
  @Override
  public void geluTanhMul(float[] gate, float[] up, int n) {
    for (int i = 0; i < n; i++) {
      double g = gate[i];
      double u = Math.sqrt(2 / Math.PI) * (g + 0.044715 * g * g * g);
      double onePlusTanh = u >= 0 ? 1 + Math.tanh(u) : 2 * Math.exp(2 * u) / (1 + Math.exp(2 * u));
      gate[i] = (float) (0.5 * g * onePlusTanh * up[i]);
    }
  }

  @Override
  public void attention(AttentionBatch b) {
    int headDim = b.headDim();
    int group = b.numHeads() / b.numKvHeads();
    double scale = 1.0 / Math.sqrt(headDim);
    MemorySegment keys = b.keys();
    MemorySegment values = b.values();
    double[] acc = new double[headDim];
    for (int t = 0; t < b.rows(); t++) {
      int first = b.firstVisible(t);
      int len = b.positions()[t] + 1;
      double[] scores = new double[len];
      for (int h = 0; h < b.numHeads(); h++) {
        int g = h / group;
        int qBase = (t * b.numHeads() + h) * headDim;
        double max = Double.NEGATIVE_INFINITY;
        for (int p = first; p < len; p++) {
          long off = b.cacheOffset(t, p, g);
          double dot = 0;
          for (int i = 0; i < headDim; i++) {
            dot += (double) b.q()[qBase + i] * b.entry(keys, off, i);
          }
          scores[p] = b.capped(dot * scale);
          max = Math.max(max, scores[p]);
        }
        double sum = 0;
        for (int p = first; p < len; p++) {
          scores[p] = Math.exp(scores[p] - max);
          sum += scores[p];
        }
        Arrays.fill(acc, 0);
        for (int p = first; p < len; p++) { // each position's values read once, summed in position order per element
          long off = b.cacheOffset(t, p, g);
          for (int i = 0; i < headDim; i++) {
            acc[i] += scores[p] * b.entry(values, off, i);
          }
        }
        for (int i = 0; i < headDim; i++) {
          b.out()[qBase + i] = (float) (acc[i] / sum);
        }
      }
    }
  }

  /** Registers the scalar backend (priority 0: used only when asked for or alone). */
  public static final class Provider implements ComputeBackendProvider {
    @Override
    public String name() {
      return "scalar";
    }

    @Override
    public boolean isAvailable() {
      return true;
    }

    @Override
    public int priority() {
      return 0;
    }

    @Override
    public ComputeBackend create(int threads) {
      return new ScalarBackend();
    }
  }
}
