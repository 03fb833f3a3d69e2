package dev.tandem.engine.cuda;

import dev.tandem.engine.compute.AttentionBatch;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ComputeBackendProvider;
import dev.tandem.engine.compute.WeightMatrix;
import it.unimi.dsi.fastutil.ints.Int2IntLinkedOpenHashMap;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * {@link ComputeBackend}'s kernels on an NVIDIA GPU. Weights are copied to the device on first
 * use and stay there (keyed by their bytes' segment) until {@link #close()}; each call copies its
 * activations in, runs its kernel on the device's stream and copies the result back. Attention
 * copies the KV blocks its rows read (each once per call, gathered through pinned memory) and runs
 * over them with a compacted block table.
 *
 * <p>This is the kernels' level: the engine's forward pass still moves activations and the KV it
 * attends to across the host link at every call, so it checks the kernels against the scalar
 * reference (the conformance suite) and runs a model correctly, but a device-resident forward
 * pass with the KV cache in device memory is what makes it fast (not built yet).
 *
 * <p>Threading: calls come from one thread at a time (the engine's), as {@link ComputeBackend}
 * says; each makes the device's context current on that thread.
 */
public final class CudaBackend implements ComputeBackend {
  private final CudaDevice device;
  private final CudaKernels kernels;
  private final DevicePool pool = new DevicePool(DevicePool.Memory.DRIVER);
  private final Map<MemorySegment, DeviceBuffer> weights = new HashMap<>();
  private PinnedBuffer staging; // KV blocks gathered for one attention call; grown on demand

  public CudaBackend(CudaDevice device) {
    this.device = device;
    this.kernels = new CudaKernels(device);
  }

  @Override
  public String name() {
    return "cuda";
  }

  public CudaDevice device() {
    return device;
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
    device.makeCurrent();
    DeviceBuffer weight = weight(w);
    try (DeviceBuffer in = pool.acquire((long) tokens * w.cols() * Float.BYTES);
        DeviceBuffer result = pool.acquire((long) tokens * w.rows() * Float.BYTES)) {
      in.copyFrom(x, tokens * w.cols());
      kernels.matmul(in.pointer(), tokens, weight.pointer(), w.dtype(), w.rows(), w.cols(), result.pointer());
      result.copyTo(out, tokens * w.rows());
    }
  }

  @Override
  public void rmsNorm(float[] x, float[] out, float[] weight, float eps, int rows, int dim) {
    device.makeCurrent();
    try (DeviceBuffer values = pool.acquire((long) rows * dim * Float.BYTES);
        DeviceBuffer scale = pool.acquire((long) dim * Float.BYTES)) {
      values.copyFrom(x, rows * dim);
      scale.copyFrom(weight, dim);
      kernels.rmsNorm(values.pointer(), values.pointer(), scale.pointer(), eps, rows, dim);
      values.copyTo(out, rows * dim);
    }
  }

  @Override
  public void rope(float[] x, int rows, int heads, int headDim, int[] positions, float[] invFreq) {
    device.makeCurrent();
    int n = rows * heads * headDim;
    try (DeviceBuffer values = pool.acquire((long) n * Float.BYTES);
        DeviceBuffer at = pool.acquire((long) rows * Integer.BYTES);
        DeviceBuffer freq = pool.acquire((long) invFreq.length * Float.BYTES)) {
      values.copyFrom(x, n);
      at.copyFrom(positions, rows);
      freq.copyFrom(invFreq, invFreq.length);
      kernels.rope(values.pointer(), rows, heads, headDim, at.pointer(), freq.pointer());
      values.copyTo(x, n);
    }
  }

  @Override
  public void siluMul(float[] gate, float[] up, int n) {
    device.makeCurrent();
    try (DeviceBuffer g = pool.acquire((long) n * Float.BYTES); DeviceBuffer u = pool.acquire((long) n * Float.BYTES)) {
      g.copyFrom(gate, n);
      u.copyFrom(up, n);
      kernels.siluMul(g.pointer(), u.pointer(), n);
      g.copyTo(gate, n);
    }
  }

  @Override
  public void attention(AttentionBatch b) {
    LaunchShapes.attention(b.rows(), b.numHeads(), b.headDim()); // refuses heads the kernel cannot hold, before any copy
    device.makeCurrent();
    // The blocks the rows read, each once, in a compacted numbering; and each row's table in it.
    Int2IntLinkedOpenHashMap compact = new Int2IntLinkedOpenHashMap();
    Map<int[], Integer> tableStarts = new IdentityHashMap<>();
    int[] starts = new int[b.rows()];
    int tableLength = 0;
    for (int t = 0; t < b.rows(); t++) {
      int[] table = b.blockTables()[t];
      int used = b.positions()[t] / b.blockSize() + 1;
      for (int i = 0; i < used; i++) {
        compact.putIfAbsent(table[i], compact.size());
      }
      Integer start = tableStarts.get(table);
      if (start == null) {
        tableStarts.put(table, tableLength);
        start = tableLength;
        tableLength += table.length;
      }
      starts[t] = start;
    }
    int[] tables = new int[Math.max(1, tableLength)];
    for (Map.Entry<int[], Integer> e : tableStarts.entrySet()) {
      int[] table = e.getKey();
      for (int i = 0; i < table.length; i++) {
        tables[e.getValue() + i] = compact.getOrDefault(table[i], 0); // blocks no row reads: never read
      }
    }
    long blockBytes = (long) b.blockSize() * b.kvDim() * b.kvDtype().bytes();
    long kvBytes = compact.size() * blockBytes;
    PinnedBuffer gathered = staging(2 * kvBytes);
    int slot = 0;
    for (int block : compact.keySet()) {
      MemorySegment.copy(b.keys(), block * blockBytes, gathered.segment(), slot * blockBytes, blockBytes);
      MemorySegment.copy(b.values(), block * blockBytes, gathered.segment(), kvBytes + slot * blockBytes, blockBytes);
      slot++;
    }
    int qLength = b.rows() * b.numHeads() * b.headDim();
    try (DeviceBuffer kv = pool.acquire(2 * kvBytes);
        DeviceBuffer q = pool.acquire((long) qLength * Float.BYTES);
        DeviceBuffer out = pool.acquire((long) qLength * Float.BYTES);
        DeviceBuffer positions = pool.acquire((long) b.rows() * Integer.BYTES);
        DeviceBuffer tableBuffer = pool.acquire((long) tables.length * Integer.BYTES);
        DeviceBuffer startBuffer = pool.acquire((long) b.rows() * Integer.BYTES)) {
      kv.copyFrom(gathered, 2 * kvBytes);
      q.copyFrom(b.q(), qLength);
      positions.copyFrom(b.positions(), b.rows());
      tableBuffer.copyFrom(tables, tables.length);
      startBuffer.copyFrom(starts, b.rows());
      kernels.attention(q.pointer(), out.pointer(), b.rows(), positions.pointer(), tableBuffer.pointer(),
          startBuffer.pointer(), kv.pointer(), kv.pointer().withByteOffset(kvBytes), b.kvDtype(), b.blockSize(),
          b.numHeads(), b.numKvHeads(), b.headDim());
      out.copyTo(b.out(), qLength);
    }
  }

  private PinnedBuffer staging(long bytes) {
    if (staging == null || staging.bytes() < bytes) {
      if (staging != null) {
        staging.close();
      }
      staging = new PinnedBuffer(Math.max(bytes, staging == null ? 1 << 20 : staging.bytes() * 2));
    }
    return staging;
  }

  /** Matrix {@code w} on the device: copied on first use, kept until this backend closes. */
  public DeviceBuffer weight(WeightMatrix w) {
    return weights.computeIfAbsent(w.data(), data -> {
      DeviceBuffer buffer = pool.allocate(data.byteSize());
      buffer.copyFrom(data);
      return buffer;
    });
  }

  /** Frees the weights, the pooled buffers and the staging memory, then closes the device. */
  @Override
  public void close() {
    device.makeCurrent();
    device.synchronize();
    weights.clear();
    pool.close();
    if (staging != null) {
      staging.close();
    }
    device.close();
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
