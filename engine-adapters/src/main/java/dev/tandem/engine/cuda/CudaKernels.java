package dev.tandem.engine.cuda;

import dev.tandem.engine.model.DType;

/**
 * The kernels of {@code tandem.cu}, one typed method each, on device memory ({@link Gpu.Ptr}s).
 * Each call issues a launch and returns; its results are there for whatever is issued after it.
 * Shapes come from {@link LaunchShapes}.
 *
 * <p>Threading: as {@link Gpu}: one thread at a time, with the device current.
 */
public final class CudaKernels {
  private final Gpu gpu;
  /**
   * Prefill tiles of a bf16 cache on tensor cores; {@code -Dtandem.cuda.tensorCoreAttention=false}
   * when the kernels are made keeps them on the SIMT kernel (for measuring the difference).
   */
  private final boolean tensorCoreAttention = !"false".equals(System.getProperty("tandem.cuda.tensorCoreAttention"));

  public CudaKernels(Gpu gpu) {
    this.gpu = gpu;
  }

  /** {@code out[t·rows + r] = Σ_i x[t·cols + i] · w[r, i]}, {@code w} holding {@code dtype} elements. */
  public void matmul(Gpu.Ptr x, int tokens, Gpu.Ptr w, DType dtype, int rows, int cols, Gpu.Ptr out) {
    gpu.launch(LaunchShapes.matmulKernel(tokens, dtype), LaunchShapes.matmul(tokens, rows, dtype), x, tokens, w, rows, cols, out);
  }

  /**
   * Up to three products of the same {@code tokens} rows (at most {@link
   * LaunchShapes#MATVEC_MAX_TOKENS}) in one launch, each as {@link #matmul} computes it: {@code
   * out_i[t·rows_i + r] = Σ_j x[t·cols + j] · w_i[r, j]}, every matrix of {@code dtype} with {@code
   * cols} columns; {@code rows2} may be 0 (then {@code w2} and {@code out2} are not touched).
   */
  public void matvecs(Gpu.Ptr x, int tokens, DType dtype, int cols, Gpu.Ptr w0, int rows0, Gpu.Ptr out0,
      Gpu.Ptr w1, int rows1, Gpu.Ptr out1, Gpu.Ptr w2, int rows2, Gpu.Ptr out2) {
    if (!LaunchShapes.usesMatvec(tokens)) {
      throw new IllegalArgumentException("matvecs multiplies up to " + LaunchShapes.MATVEC_MAX_TOKENS + " tokens, not " + tokens);
    }
    gpu.launch(LaunchShapes.kernel("matvecs", dtype), LaunchShapes.matvec(rows0 + rows1 + rows2),
        x, tokens, w0, rows0, w1, rows1, w2, rows2, cols, out0, out1, out2);
  }

  /** Each of {@code rows} rows of {@code dim}: {@code x += b}, then {@code out = x / sqrt(mean(x²) + eps) · weight}. */
  public void addRmsNorm(Gpu.Ptr x, Gpu.Ptr b, Gpu.Ptr out, Gpu.Ptr weight, float eps, int rows, int dim) {
    gpu.launch("add_rms_norm", LaunchShapes.rmsNorm(rows, dim), x, b, out, weight, eps, dim);
  }

  /** Each of {@code rows} rows of {@code dim}: {@code out = x / sqrt(mean(x²) + eps) · weight}; out may be x. */
  public void rmsNorm(Gpu.Ptr x, Gpu.Ptr out, Gpu.Ptr weight, float eps, int rows, int dim) {
    gpu.launch("rms_norm", LaunchShapes.rmsNorm(rows, dim), x, out, weight, eps, dim);
  }

  /** Rotary embedding of {@code heads} heads of each row at {@code positions[t]} (ints on the device). */
  public void rope(Gpu.Ptr x, int rows, int heads, int headDim, Gpu.Ptr positions, Gpu.Ptr invFreq) {
    gpu.launch("rope", LaunchShapes.elementwise((long) rows * heads * (headDim / 2)), x, rows, heads, headDim, positions, invFreq);
  }

  /** {@code gate[i] = silu(gate[i]) · up[i]}. */
  public void siluMul(Gpu.Ptr gate, Gpu.Ptr up, long n) {
    gpu.launch("silu_mul", LaunchShapes.elementwise(n), gate, up, n);
  }

  /** {@code a[i] += b[i % period]} for {@code i < n}: a residual ({@code period = n}) or a bias per row. */
  public void add(Gpu.Ptr a, Gpu.Ptr b, long n, int period) {
    gpu.launch("add", LaunchShapes.elementwise(n), a, b, n, period);
  }

  /** Rows of the embedding table {@code (vocab, hidden)} of {@code dtype} for each token id. */
  public void embed(Gpu.Ptr ids, int tokens, Gpu.Ptr table, DType dtype, int hidden, Gpu.Ptr out) {
    gpu.launch(LaunchShapes.kernel("embed", dtype), LaunchShapes.elementwise((long) tokens * hidden), ids, tokens, table, hidden, out);
  }

  /**
   * Causal attention over a paged cache of {@code kvDtype} entries, as {@code plan} splits the rows:
   * the tiles ({@code tileCount} pairs of first row and count at {@code tiles}) through the tiled
   * kernel, the single rows ({@code singleCount} row ids at {@code singles}) through the per-row
   * kernel, its context cut into parts when few rows decode ({@link LaunchShapes#attentionSplits}),
   * their partial results in {@code partials} ({@link LaunchShapes#PARTIAL_FLOATS} floats) until
   * merged. Row t's position is {@code positions[t]}, its block table starts at {@code
   * tables[tableStart[t]]}.
   */
  public void attention(Gpu.Ptr q, Gpu.Ptr out, Gpu.Ptr positions, Gpu.Ptr tables, Gpu.Ptr tableStart,
      Gpu.Ptr singles, int singleCount, Gpu.Ptr tiles, int tileCount, Gpu.Ptr keys, Gpu.Ptr values, DType kvDtype,
      int blockSize, int numHeads, int numKvHeads, int headDim, Gpu.Ptr partials) {
    if (singleCount > 0) {
      int splits = LaunchShapes.attentionSplits(singleCount, numHeads);
      gpu.launch(LaunchShapes.kernel("attention", kvDtype), LaunchShapes.attention(singleCount, numHeads, headDim, splits),
          q, out, positions, tables, tableStart, singles, keys, values, blockSize, numHeads, numKvHeads, headDim,
          splits, partials);
      if (splits > 1) {
        gpu.launch("attention_combine", LaunchShapes.attentionCombine(singleCount, numHeads),
            out, singles, partials, numHeads, headDim, splits);
      }
    }
    if (tileCount > 0) {
      gpu.launch(LaunchShapes.attentionTiledKernel(kvDtype, headDim, tensorCoreAttention), LaunchShapes.attentionTiled(tileCount, numHeads, headDim),
          q, out, positions, tables, tableStart, tiles, keys, values, blockSize, numHeads, numKvHeads, headDim);
    }
  }

  /**
   * Stores row t's keys and values at cache slot {@code slots[t]}, narrowed to {@code kvDtype}, in
   * the device cache and, when {@code hostKeys} is not null, in mapped host memory too.
   */
  public void kvWrite(Gpu.Ptr k, Gpu.Ptr v, Gpu.Ptr slots, int rows, int kvDim, DType kvDtype, Gpu.Ptr keys, Gpu.Ptr values,
      Gpu.Ptr hostKeys, Gpu.Ptr hostValues) {
    gpu.launch(LaunchShapes.kernel("kv_write", kvDtype), LaunchShapes.elementwise((long) rows * kvDim),
        k, v, slots, rows, kvDim, keys, values, orNull(hostKeys), orNull(hostValues));
  }

  /** Copies the cache blocks listed in {@code blocks} ({@code count} ints) from src to dst, {@code blockBytes} each (a multiple of 16). */
  public void copyBlocks(Gpu.Ptr src, Gpu.Ptr dst, Gpu.Ptr blocks, int count, long blockBytes) {
    int vectors = LaunchShapes.vectorsPerBlock(blockBytes);
    gpu.launch("copy_blocks", LaunchShapes.elementwise((long) count * vectors), src, dst, blocks, count, vectors);
  }

  /** {@code out[j] = x[rows[j]]} for {@code j < count}, rows of {@code hidden}. */
  public void gatherRows(Gpu.Ptr x, Gpu.Ptr rows, int count, int hidden, Gpu.Ptr out) {
    gpu.launch("gather_rows", LaunchShapes.elementwise((long) count * hidden), x, rows, count, hidden, out);
  }

  private static Gpu.Ptr orNull(Gpu.Ptr p) {
    return p != null ? p : new Gpu.Ptr(0);
  }
}
