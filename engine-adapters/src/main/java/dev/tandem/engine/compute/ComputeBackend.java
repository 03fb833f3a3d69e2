package dev.tandem.engine.compute;

/**
 * The kernels of a decoder transformer's forward pass. Activations are row-major {@code float[]}
 * with one row per token; weights stay in their file's element type ({@link WeightMatrix}).
 *
 * <p>Threading: a backend may use its own threads inside a call; calls come from one thread (the
 * engine's) and return when their output is complete. Weight and cache segments must be readable
 * from any thread (a shared or global arena, or a mapped file).
 */
public interface ComputeBackend extends AutoCloseable {
  String name();

  /** {@code out[t·rows + r] = Σ_i x[t·cols + i] · w[r, i]} for {@code t < tokens}, {@code r < w.rows()}. */
  void matmul(float[] x, int tokens, WeightMatrix w, float[] out);

  /**
   * Several matmuls of the same input ({@code outs[m]} gets {@code x · ws[m]ᵀ}), e.g. the q, k and v
   * projections; a backend may run them as one parallel job. All matrices have {@code x}'s width.
   */
  default void matmul(float[] x, int tokens, WeightMatrix[] ws, float[][] outs) {
    for (int m = 0; m < ws.length; m++) {
      matmul(x, tokens, ws[m], outs[m]);
    }
  }

  /**
   * Root-mean-square normalisation of each of {@code rows} rows of length {@code dim}: {@code
   * out = x / sqrt(mean(x²) + eps) · weight}. {@code out} may be {@code x}.
   */
  void rmsNorm(float[] x, float[] out, float[] weight, float eps, int rows, int dim);

  /**
   * Rotary position embedding, Hugging Face layout: in each of {@code heads} heads of row t the
   * first {@code r = 2·invFreq.length} dimensions are rotated, dimension i paired with i + r/2, by
   * angles {@code positions[t] · invFreq[i]} with cos and sin multiplied by {@code scale}
   * (LongRoPE's attention factor, else 1); dimensions r to headDim pass through ({@code
   * partial_rotary_factor}).
   */
  void rope(float[] x, int rows, int heads, int headDim, int[] positions, float[] invFreq, float scale);

  /**
   * How many bytes of weights one decode step of the model this backend runs streams (told once,
   * before the first step): a backend may read large models' weights differently. Ignored by
   * default.
   */
  default void streamsWeightsPerStep(long bytes) {}

  /** {@code gate[i] = silu(gate[i]) · up[i]} for {@code i < n}. */
  void siluMul(float[] gate, float[] up, int n);

  /**
   * {@code gate[i] = gelu(gate[i]) · up[i]} for {@code i < n}, GELU in its tanh approximation
   * (PyTorch's {@code gelu(approximate="tanh")}: {@code 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))}).
   */
  void geluTanhMul(float[] gate, float[] up, int n);

  /**
   * A low-rank change added to some rows (a LoRA adapter's to a projection's output): for each row
   * {@code t} of {@code rows}, {@code out[t] += Σ_k (A[k] · in[t]) · B[k]}, where {@code in}'s rows
   * have {@code inDim} values, {@code out}'s {@code outDim}, {@code ab} holds A's {@code rank} rows
   * from {@code aAt} ({@code rank × inDim}) and B's {@code rank} columns from {@code bAt} ({@code
   * rank × outDim}). Other rows of {@code out} are left as they are.
   */
  default void addLowRank(float[] in, int inDim, int[] rows, float[] ab, int aAt, int bAt, int rank, float[] out, int outDim) {
    float[] mid = new float[rank];
    for (int t : rows) {
      for (int k = 0; k < rank; k++) {
        float sum = 0;
        for (int i = 0; i < inDim; i++) {
          sum += ab[aAt + k * inDim + i] * in[t * inDim + i];
        }
        mid[k] = sum;
      }
      for (int k = 0; k < rank; k++) {
        for (int o = 0; o < outDim; o++) {
          out[t * outDim + o] += mid[k] * ab[bAt + k * outDim + o];
        }
      }
    }
  }

  /** Causal attention over the paged KV cache; see {@link AttentionBatch}. */
  void attention(AttentionBatch batch);

  @Override
  default void close() {}
}
