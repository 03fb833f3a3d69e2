package dev.tandem.engine.cuda;

import dev.tandem.engine.model.DType;

/**
 * Grid and block sizes of every kernel in {@code tandem.cu}, and which kernel serves which call:
 * plain arithmetic, kept on the host so that it is tested without a GPU. The constants must agree
 * with the {@code #define}s at the top of {@code tandem.cu}.
 */
public final class LaunchShapes {
  static final int WARP = 32;
  /** Tokens one matrix-vector launch multiplies at once (its accumulators per lane). */
  public static final int MATVEC_MAX_TOKENS = 8;
  static final int MATVEC_THREADS = 256;
  static final int GEMM_TILE = 64;
  static final int GEMM_THREADS = 256;
  static final int TC_THREADS = 128;
  static final int ATTENTION_THREADS = 128;
  static final int PREFILL_THREADS = 128;
  /** The largest head the attention kernel holds (its query in shared memory, two dims a thread). */
  public static final int MAX_HEAD_DIM = 256;
  static final int ELEMENTWISE_THREADS = 256;
  static final int MAX_NORM_THREADS = 256;
  private static final int MAX_GRID_Y = 65_535;

  private LaunchShapes() {}

  /** A launch: {@code gridX × gridY} blocks of {@code block} threads. */
  public record Shape(int gridX, int gridY, int block) {
    public Shape {
      if (gridX < 1 || gridY < 1 || gridY > MAX_GRID_Y || block < 1 || block > 1024) {
        throw new IllegalArgumentException("no such launch: grid " + gridX + "×" + gridY + ", block " + block);
      }
    }
  }

  /** The product of {@code tokens} rows with a weight matrix: the one-pass matrix-vector kernel up to 8 tokens, else a GEMM. */
  public static boolean usesMatvec(int tokens) {
    return tokens <= MATVEC_MAX_TOKENS;
  }

  /** Past the matrix-vector kernel, bf16 weights multiply on tensor cores; f16 and f32 on the SIMT GEMM. */
  public static boolean usesTensorCores(int tokens, DType weights) {
    return !usesMatvec(tokens) && weights == DType.BF16;
  }

  /** The kernel for {@code tokens} rows times a matrix of {@code weights}. */
  public static String matmulKernel(int tokens, DType weights) {
    if (usesMatvec(tokens)) {
      return kernel("matvec", weights);
    }
    return usesTensorCores(tokens, weights) ? "gemm_tc_bf16" : kernel("gemm", weights);
  }

  /** Its launch: a warp per row, or 64 × 64 output tiles (256 SIMT threads, or 4 warps of tensor-core fragments). */
  public static Shape matmul(int tokens, int rows, DType weights) {
    if (usesMatvec(tokens)) {
      return matvec(rows);
    }
    Shape tiles = gemm(tokens, rows);
    return usesTensorCores(tokens, weights) ? new Shape(tiles.gridX(), tiles.gridY(), TC_THREADS) : tiles;
  }

  /** One warp per output row. */
  public static Shape matvec(int rows) {
    int warpsPerBlock = MATVEC_THREADS / WARP;
    return new Shape(blocks(rows, warpsPerBlock), 1, MATVEC_THREADS);
  }

  /** 64 × 64 output tiles: x over weight rows, y over tokens. */
  public static Shape gemm(int tokens, int rows) {
    return new Shape(blocks(rows, GEMM_TILE), blocks(tokens, GEMM_TILE), GEMM_THREADS);
  }

  /** One block per row, a warp multiple of threads up to the row's length (at most 256). */
  public static Shape rmsNorm(int rows, int dim) {
    int threads = Math.min(MAX_NORM_THREADS, Math.max(WARP, blocks(dim, WARP) * WARP));
    return new Shape(rows, 1, threads);
  }

  /** One thread per element (or per rotated pair). */
  public static Shape elementwise(long n) {
    long grid = (n + ELEMENTWISE_THREADS - 1) / ELEMENTWISE_THREADS;
    if (n < 1 || grid > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("no elementwise launch covers " + n + " elements");
    }
    return new Shape((int) grid, 1, ELEMENTWISE_THREADS);
  }

  /** One block per (tile of up to 32 rows of one sequence, head), for heads of up to 128 dims. */
  public static Shape attentionTiled(int tiles, int heads, int headDim) {
    if (headDim > AttentionPlan.TILED_MAX_HEAD) {
      throw new IllegalArgumentException("the tiled attention kernel holds heads of up to " + AttentionPlan.TILED_MAX_HEAD + " dims, not " + headDim);
    }
    return new Shape(tiles, heads, PREFILL_THREADS);
  }

  /**
   * The kernel for a step's prefill tiles: on tensor cores ({@code attention_tiled_tc_bf16}) for a
   * bf16 cache and heads of 16 to 128 dims in steps of 16 when {@code tensorCores}, else the SIMT
   * kernel of the cache's type.
   */
  public static String attentionTiledKernel(DType kvDtype, int headDim, boolean tensorCores) {
    boolean fits = kvDtype == DType.BF16 && headDim % 16 == 0 && headDim >= 16 && headDim <= AttentionPlan.TILED_MAX_HEAD;
    return tensorCores && fits ? "attention_tiled_tc_bf16" : kernel("attention_tiled", kvDtype);
  }

  /** Blocks that fill the GPU well enough with decode attention (a part of a row's context each). */
  static final int SPLIT_TARGET_BLOCKS = 256;
  static final int MAX_SPLITS = 8;
  /** Floats the split parts of one attention call can take: every split step has at most {@link #SPLIT_TARGET_BLOCKS} (row, head, part)s. */
  public static final int PARTIAL_FLOATS = SPLIT_TARGET_BLOCKS * (MAX_HEAD_DIM + 2);

  /**
   * Parts each single row's context is cut into (flash decoding): enough blocks for the GPU when
   * few rows decode (up to 8 parts), one part when rows × heads already make 256 blocks.
   */
  public static int attentionSplits(int rows, int heads) {
    return Math.max(1, Math.min(MAX_SPLITS, SPLIT_TARGET_BLOCKS / Math.max(1, rows * heads)));
  }

  /** One block per (query row, head, part of its context). */
  public static Shape attention(int rows, int heads, int headDim, int splits) {
    attention(rows, heads, headDim);
    return new Shape(rows, heads * splits, ATTENTION_THREADS);
  }

  /** Merging the parts: one block per (row, head). */
  public static Shape attentionCombine(int rows, int heads) {
    return new Shape(rows, heads, ATTENTION_THREADS);
  }

  /** One block per (query row, head). */
  public static Shape attention(int rows, int heads, int headDim) {
    if (headDim > MAX_HEAD_DIM) {
      throw new IllegalArgumentException("the cuda attention kernel holds heads of up to " + MAX_HEAD_DIM + " dims, not " + headDim);
    }
    return new Shape(rows, heads, ATTENTION_THREADS);
  }

  /** 16-byte vectors in a cache block of {@code blockBytes}, which the block copy moves whole. */
  public static int vectorsPerBlock(long blockBytes) {
    if (blockBytes <= 0 || blockBytes % 16 != 0 || blockBytes / 16 > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("a KV block of " + blockBytes + " bytes is not a whole number of 16-byte vectors");
    }
    return (int) (blockBytes / 16);
  }

  /** {@code base} for weights or KV entries of {@code dtype}, e.g. {@code matvec_bf16}. */
  public static String kernel(String base, DType dtype) {
    return base + "_" + dtype.shortName();
  }

  /** The PTX a device of compute capability {@code major}.x runs, or null below 8. */
  public static String ptxResource(int major) {
    if (major >= 9) {
      return "tandem-sm90.ptx";
    }
    return major >= 8 ? "tandem-sm80.ptx" : null;
  }

  private static int blocks(long n, int per) {
    long b = (n + per - 1) / per;
    if (n < 1 || b > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("no launch covers " + n);
    }
    return (int) b;
  }
}
