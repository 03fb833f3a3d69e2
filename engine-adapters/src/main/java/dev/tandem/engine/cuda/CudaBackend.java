package dev.tandem.engine.cuda;

import dev.tandem.engine.compute.AttentionBatch;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ComputeBackendProvider;
import dev.tandem.engine.compute.WeightMatrix;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;

/**
 * {@link ComputeBackend}'s kernels on an NVIDIA GPU (or, in tests, on the same kernels compiled
 * for the CPU: any {@link Gpu}). Weights are copied to the device on first use and stay there
 * (keyed by their bytes' segment) until {@link #close()}; each call copies its activations in,
 * runs its kernel and copies the result back. Attention copies the KV blocks its rows read (each
 * once per call, gathered through pinned memory) and runs over them with a compacted block table.
 *
 * <p>This is the kernels' level, which the conformance suite checks; the engine runs the device
 * forward pass ({@code builtin/CudaTransformer}), which keeps activations and a KV cache on the
 * device and uses this backend for its weights, pool and kernels.
 *
 * <p>Threading: calls come from one thread at a time (the engine's), as {@link ComputeBackend}
 * says; each makes the device current on that thread.
 */
public final class CudaBackend implements ComputeBackend {
  private final Gpu gpu;
  private final CudaKernels kernels;
  private final DevicePool pool;
  private final Map<MemorySegment, DeviceBuffer> weights = new HashMap<>();
  private PinnedBuffer staging; // KV blocks gathered for one attention call; grown on demand

  /** A backend on {@code gpu}, which it closes when it closes. */
  public CudaBackend(Gpu gpu) {
    this.gpu = gpu;
    this.kernels = new CudaKernels(gpu);
    this.pool = new DevicePool(gpu);
  }

  @Override
  public String name() {
    return "cuda";
  }

  public Gpu gpu() {
    return gpu;
  }

  /** The kernels on device memory, for a forward pass that keeps its activations there. */
  public CudaKernels kernels() {
    return kernels;
  }

  /** The device memory pool this backend allocates from; closed with it. */
  public DevicePool pool() {
    return pool;
  }

  @Override
  public void matmul(float[] x, int tokens, WeightMatrix w, float[] out) {
    gpu.makeCurrent();
    DeviceBuffer weight = weight(w);
    try (DeviceBuffer in = pool.acquire((long) tokens * w.cols() * Float.BYTES);
        DeviceBuffer result = pool.acquire((long) tokens * w.rows() * Float.BYTES)) {
      in.copyFrom(x, tokens * w.cols());
      kernels.matmul(in.ptr(), tokens, weight.ptr(), w.dtype(), w.rows(), w.cols(), result.ptr());
      result.copyTo(out, tokens * w.rows());
    }
  }

  @Override
  public void rmsNorm(float[] x, float[] out, float[] weight, float eps, int rows, int dim) {
    gpu.makeCurrent();
    try (DeviceBuffer values = pool.acquire((long) rows * dim * Float.BYTES);
        DeviceBuffer scale = pool.acquire((long) dim * Float.BYTES)) {
      values.copyFrom(x, rows * dim);
      scale.copyFrom(weight, dim);
      kernels.rmsNorm(values.ptr(), values.ptr(), scale.ptr(), eps, rows, dim);
      values.copyTo(out, rows * dim);
    }
  }

  @Override
  public void rope(float[] x, int rows, int heads, int headDim, int[] positions, float[] invFreq, float scale) {
    if (invFreq.length * 2 != headDim || scale != 1f) {
      throw new UnsupportedOperationException("the CUDA rope kernel rotates whole heads, unscaled (no partial_rotary_factor or LongRoPE)");
    }
    gpu.makeCurrent();
    int n = rows * heads * headDim;
    try (DeviceBuffer values = pool.acquire((long) n * Float.BYTES);
        DeviceBuffer at = pool.acquire((long) rows * Integer.BYTES);
        DeviceBuffer freq = pool.acquire((long) invFreq.length * Float.BYTES)) {
      values.copyFrom(x, n);
      at.copyFrom(positions, rows);
      freq.copyFrom(invFreq, invFreq.length);
      kernels.rope(values.ptr(), rows, heads, headDim, at.ptr(), freq.ptr());
      values.copyTo(x, n);
    }
  }

  @Override
  public void siluMul(float[] gate, float[] up, int n) {
    gpu.makeCurrent();
    try (DeviceBuffer g = pool.acquire((long) n * Float.BYTES); DeviceBuffer u = pool.acquire((long) n * Float.BYTES)) {
      g.copyFrom(gate, n);
      u.copyFrom(up, n);
      kernels.siluMul(g.ptr(), u.ptr(), n);
      g.copyTo(gate, n);
    }
  }

  /** No kernel yet: Gemma 3, the one model with GeGLU here, is refused on the GPU before it gets this far. */
  @Override
  public void geluTanhMul(float[] gate, float[] up, int n) {
    throw new UnsupportedOperationException("the CUDA backend has no GELU kernel yet; run GeGLU models with --compute cpu");
  }

  @Override
  public void attention(AttentionBatch b) {
    LaunchShapes.attention(b.rows(), b.numHeads(), b.headDim()); // refuses heads the kernel cannot hold, before any copy
    if (b.softcap() > 0) { // Gemma 2, refused on the GPU before it gets this far (CudaTransformer.checkSupported)
      throw new UnsupportedOperationException("the CUDA attention kernels do not cap scores (attn_logit_softcapping); run with --compute cpu");
    }
    for (int t = 0; t < b.rows(); t++) {
      if (b.firstVisible(t) > 0) { // the engine caps such a model's context at its window (BuiltinEngine)
        throw new UnsupportedOperationException("the CUDA attention kernels have no sliding window: row " + t + " at position "
            + b.positions()[t] + " is past the window of " + b.window() + " positions");
      }
    }
    gpu.makeCurrent();
    AttentionTables compact = AttentionTables.of(b);
    long kvBytes = compact.keyBytes(b);
    PinnedBuffer gathered = staging(2 * kvBytes);
    compact.gather(b, gathered.segment());
    int[] tables = compact.tables();
    int[] starts = compact.starts();
    int qLength = b.rows() * b.numHeads() * b.headDim();
    // Rows on the same table at the next position continue a run (a prefill chunk): tiled.
    AttentionPlan plan = AttentionPlan.of(b.rows(),
        t -> b.blockTables()[t] == b.blockTables()[t - 1] && b.positions()[t] == b.positions()[t - 1] + 1, b.headDim());
    try (DeviceBuffer kv = pool.acquire(2 * kvBytes);
        DeviceBuffer q = pool.acquire((long) qLength * Float.BYTES);
        DeviceBuffer out = pool.acquire((long) qLength * Float.BYTES);
        DeviceBuffer positions = pool.acquire((long) b.rows() * Integer.BYTES);
        DeviceBuffer tableBuffer = pool.acquire((long) tables.length * Integer.BYTES);
        DeviceBuffer startBuffer = pool.acquire((long) b.rows() * Integer.BYTES);
        DeviceBuffer singles = pool.acquire((long) Math.max(1, plan.singles().length) * Integer.BYTES);
        DeviceBuffer tiles = pool.acquire((long) Math.max(1, plan.tiles().length) * Integer.BYTES);
        DeviceBuffer partials = pool.acquire((long) LaunchShapes.PARTIAL_FLOATS * Float.BYTES)) {
      kv.copyFrom(gathered.segment().asSlice(0, 2 * kvBytes));
      q.copyFrom(b.q(), qLength);
      positions.copyFrom(b.positions(), b.rows());
      tableBuffer.copyFrom(tables, tables.length);
      startBuffer.copyFrom(starts, b.rows());
      singles.copyFrom(plan.singles(), plan.singles().length);
      tiles.copyFrom(plan.tiles(), plan.tiles().length);
      kernels.attention(q.ptr(), out.ptr(), positions.ptr(), tableBuffer.ptr(), startBuffer.ptr(),
          singles.ptr(), plan.singles().length, tiles.ptr(), plan.tileCount(),
          kv.ptr(), kv.at(kvBytes), b.kvDtype(), b.blockSize(), b.numHeads(), b.numKvHeads(), b.headDim(), partials.ptr());
      out.copyTo(b.out(), qLength);
    }
  }

  private PinnedBuffer staging(long bytes) {
    if (staging == null || staging.bytes() < bytes) {
      long size = Math.max(bytes, staging == null ? 1 << 20 : staging.bytes() * 2);
      if (staging != null) {
        staging.close();
      }
      staging = new PinnedBuffer(gpu, size);
    }
    return staging;
  }

  /**
   * Matrix {@code w} on the device: copied on first use, kept until this backend closes.
   *
   * @throws UnsupportedOperationException for quantized (Q8_0, Q4_0) weights, which no kernel here reads
   */
  public DeviceBuffer weight(WeightMatrix w) {
    if (w.dtype().quantized()) {
      throw new UnsupportedOperationException(w.name() + ": " + w.dtype().shortName() + " weights have no GPU kernels; quantized weights run on --compute cpu");
    }
    return weights.computeIfAbsent(w.data(), data -> {
      DeviceBuffer buffer = pool.allocate(data.byteSize());
      buffer.copyFrom(data);
      return buffer;
    });
  }

  /** Frees the weights, the pooled buffers and the staging memory, then closes the device. */
  @Override
  public void close() {
    gpu.makeCurrent();
    gpu.synchronize();
    weights.clear();
    pool.close();
    if (staging != null) {
      staging.close();
    }
    gpu.close();
  }

  /** Registers the cuda backend (priority 20: chosen over cpu whenever a CUDA device initialises). */
  public static final class Provider implements ComputeBackendProvider {
    @Override
    public String name() {
      return "cuda";
    }

    @Override
    public boolean isAvailable() {
      return CudaDriver.available();
    }

    @Override
    public String unavailableReason() {
      return CudaDriver.unavailableReason();
    }

    @Override
    public int priority() {
      return 20;
    }

    @Override
    public ComputeBackend create(int threads) {
      return new CudaBackend(CudaDevice.open(0));
    }
  }
}
