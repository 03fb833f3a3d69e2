package dev.tandem.engine.cuda;

import dev.tandem.engine.model.DType;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

/**
 * The kernels of {@code tandem.cu}, one typed method each, on device memory. Each call queues a
 * launch on the device's stream and returns; results are there for whatever is queued after it
 * (the synchronous copies of {@link DeviceBuffer} wait for them). Shapes come from {@link
 * LaunchShapes}.
 *
 * <p>Threading: as {@link CudaDevice}: one thread at a time, with the context current.
 */
public final class CudaKernels {
  private final CudaDevice device;

  public CudaKernels(CudaDevice device) {
    this.device = device;
  }

  public CudaDevice device() {
    return device;
  }

  /** {@code out[t·rows + r] = Σ_i x[t·cols + i] · w[r, i]}, {@code w} holding {@code dtype} elements. */
  public void matmul(CUdeviceptr x, int tokens, CUdeviceptr w, DType dtype, int rows, int cols, CUdeviceptr out) {
    boolean matvec = LaunchShapes.usesMatvec(tokens);
    device.launch(
        LaunchShapes.kernel(matvec ? "matvec" : "gemm", dtype),
        matvec ? LaunchShapes.matvec(rows) : LaunchShapes.gemm(tokens, rows),
        args(x, ints(tokens), w, ints(rows), ints(cols), out));
  }

  /** Each of {@code rows} rows of {@code dim}: {@code out = x / sqrt(mean(x²) + eps) · weight}; out may be x. */
  public void rmsNorm(CUdeviceptr x, CUdeviceptr out, CUdeviceptr weight, float eps, int rows, int dim) {
    device.launch("rms_norm", LaunchShapes.rmsNorm(rows, dim), args(x, out, weight, Pointer.to(new float[] {eps}), ints(dim)));
  }

  /** Rotary embedding of {@code heads} heads of each row at {@code positions[t]} (ints on the device). */
  public void rope(CUdeviceptr x, int rows, int heads, int headDim, CUdeviceptr positions, CUdeviceptr invFreq) {
    device.launch("rope", LaunchShapes.elementwise((long) rows * heads * (headDim / 2)),
        args(x, ints(rows), ints(heads), ints(headDim), positions, invFreq));
  }

  /** {@code gate[i] = silu(gate[i]) · up[i]}. */
  public void siluMul(CUdeviceptr gate, CUdeviceptr up, long n) {
    device.launch("silu_mul", LaunchShapes.elementwise(n), args(gate, up, Pointer.to(new long[] {n})));
  }

  /** {@code a[i] += b[i % period]} for {@code i < n}: a residual ({@code period = n}) or a bias per row. */
  public void add(CUdeviceptr a, CUdeviceptr b, long n, int period) {
    device.launch("add", LaunchShapes.elementwise(n), args(a, b, Pointer.to(new long[] {n}), ints(period)));
  }

  /** Rows of the embedding table {@code (vocab, hidden)} of {@code dtype} for each token id. */
  public void embed(CUdeviceptr ids, int tokens, CUdeviceptr table, DType dtype, int hidden, CUdeviceptr out) {
    device.launch(LaunchShapes.kernel("embed", dtype), LaunchShapes.elementwise((long) tokens * hidden),
        args(ids, ints(tokens), table, ints(hidden), out));
  }

  /**
   * Causal attention of {@code rows} query rows over a paged cache of {@code kvDtype} entries; row
   * t's block table starts at {@code tables[tableStart[t]]}.
   */
  public void attention(CUdeviceptr q, CUdeviceptr out, int rows, CUdeviceptr positions, CUdeviceptr tables,
      CUdeviceptr tableStart, CUdeviceptr keys, CUdeviceptr values, DType kvDtype, int blockSize, int numHeads,
      int numKvHeads, int headDim) {
    device.launch(LaunchShapes.kernel("attention", kvDtype), LaunchShapes.attention(rows, numHeads, headDim),
        args(q, out, positions, tables, tableStart, keys, values, ints(blockSize), ints(numHeads), ints(numKvHeads),
            ints(headDim)));
  }

  /**
   * Stores row t's keys and values at cache slot {@code slots[t]}, narrowed to {@code kvDtype}, in
   * the device cache and, when {@code hostKeys} is not null, in mapped host memory too.
   */
  public void kvWrite(CUdeviceptr k, CUdeviceptr v, CUdeviceptr slots, int rows, int kvDim, DType kvDtype,
      CUdeviceptr keys, CUdeviceptr values, CUdeviceptr hostKeys, CUdeviceptr hostValues) {
    device.launch(LaunchShapes.kernel("kv_write", kvDtype), LaunchShapes.elementwise((long) rows * kvDim),
        args(k, v, slots, ints(rows), ints(kvDim), keys, values, orNull(hostKeys), orNull(hostValues)));
  }

  /** Copies the cache blocks listed in {@code blocks} (count ints) from src to dst, {@code blockBytes} each (a multiple of 16). */
  public void copyBlocks(CUdeviceptr src, CUdeviceptr dst, CUdeviceptr blocks, int count, long blockBytes) {
    int vectors = LaunchShapes.vectorsPerBlock(blockBytes);
    device.launch("copy_blocks", LaunchShapes.elementwise((long) count * vectors), args(src, dst, blocks, ints(count), ints(vectors)));
  }

  /** {@code out[j] = x[rows[j]]} for {@code j < count}, rows of {@code hidden}. */
  public void gatherRows(CUdeviceptr x, CUdeviceptr rows, int count, int hidden, CUdeviceptr out) {
    device.launch("gather_rows", LaunchShapes.elementwise((long) count * hidden), args(x, rows, ints(count), ints(hidden), out));
  }

  private static Pointer args(NativePointerObject... arguments) {
    Pointer[] pointers = new Pointer[arguments.length];
    for (int i = 0; i < arguments.length; i++) {
      pointers[i] = arguments[i] instanceof Pointer p && !(arguments[i] instanceof CUdeviceptr) ? p : Pointer.to(arguments[i]);
    }
    return Pointer.to(pointers);
  }

  private static NativePointerObject orNull(CUdeviceptr pointer) {
    return pointer != null ? pointer : new CUdeviceptr(); // a null device pointer
  }

  private static Pointer ints(int value) {
    return Pointer.to(new int[] {value});
  }
}
