package dev.tandem.engine.builtin;

import dev.tandem.engine.KvHandoff;
import dev.tandem.engine.compute.WeightMatrix;
import dev.tandem.engine.cuda.AttentionPlan;
import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.cuda.CudaException;
import dev.tandem.engine.cuda.CudaKernels;
import dev.tandem.engine.cuda.DeviceBuffer;
import dev.tandem.engine.cuda.DevicePool;
import dev.tandem.engine.cuda.Gpu;
import dev.tandem.engine.cuda.LaunchShapes;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LayerWeights;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The forward pass on a GPU: weights, activations and a copy of the KV cache in device memory,
 * the same steps as {@link Transformer} (one comment per step), each a kernel of {@link
 * CudaKernels} on the device's stream. Only the step's token ids, positions and block tables go to
 * the device, and only the logits asked for come back.
 *
 * <p>KV: every layer's keys and values live in device memory, laid out as the host {@link
 * PagedKvCache} is; the KV write kernel stores each new entry there and, through the host cache's
 * memory mapped into the device ({@code cuMemHostRegister}), in the host cache too, with the same
 * bits. So the block pool, prefix reuse, preemption and KV export work on the host cache as with
 * any backend; blocks an import wrote into the host cache are copied to the device ({@link
 * #hostBlocksWritten}) before a step reads them.
 *
 * <p>Ownership: owns its device cache, activations (pooled, returned after each pass) and its
 * registration of the host cache's memory, all released by {@link #close()}; the weights on the
 * device belong to the {@link CudaBackend}. Threading: the engine thread.
 */
public final class CudaTransformer implements ForwardPass {
  private static final Logger LOG = LoggerFactory.getLogger(CudaTransformer.class);
  /** Tokens whose prompt logits go through the LM head together. */
  private static final int PROMPT_LOGITS_CHUNK = 16;
  /** Regions of {@code tokens} ints in a step's ints before its block tables. */
  private static final int META_TABLES = 6;
  /** Decode steps of up to this many sequences replay a recorded graph of the whole pass. */
  private static final int GRAPH_MAX_TOKENS = 256;
  /** {@code -Dtandem.cuda.graphs=false} runs every step kernel by kernel (to rule graphs out). */
  private static final boolean GRAPHS_BY_DEFAULT = !"false".equals(System.getProperty("tandem.cuda.graphs"));

  /** One layer's small vectors on the device (null where the architecture has none) and its matrices. */
  private record Layer(
      DeviceBuffer inputNorm, DeviceBuffer qBias, DeviceBuffer kBias, DeviceBuffer vBias, DeviceBuffer qNorm,
      DeviceBuffer kNorm, DeviceBuffer oBias, DeviceBuffer mlpNorm, LayerWeights weights) {}

  private final ModelConfig config;
  private final ModelWeights weights;
  private final CudaBackend backend;
  private final CudaKernels kernels;
  private final Gpu gpu;
  private final DevicePool pool;
  private final int blockSize;
  private final DType kvDtype;
  private final List<DeviceBuffer> owned = new ArrayList<>();
  private final Layer[] layers;
  private final DeviceBuffer invFreq; // (headDim / 2)
  private final DeviceBuffer finalNorm; // (hidden)
  private final DeviceBuffer[] keys; // per layer, as the host cache: (blocks × blockSize, kvDim)
  private final DeviceBuffer[] values;
  private final MemorySegment[] mapped; // host segments registered: keys of layer l at 2l, values at 2l + 1
  private final Gpu.Ptr[] mappedPointers;
  private final Map<Integer, DecodeGraph> graphs = new HashMap<>(); // by batch size
  private boolean useGraphs; // off for good once the device refuses a capture
  // The last pass's final-norm rows (finalHidden): copied back after a pass run kernel by kernel, or
  // read on demand from the replayed graph's buffer (a decode step's rows are seldom wanted).
  private float[] lastHidden;
  private DecodeGraph lastGraph;
  private int[] lastHiddenRow; // per slice of the last pass: its row among the wanted ones, or -1
  /**
   * Fused launches (q/k/v and gate/up in one matrix-vector launch each, a residual add with the
   * norm after it); {@code -Dtandem.cuda.fused=false} when the pass is made issues them one by one
   * (the same results: for measuring what the fusions save).
   */
  private final boolean fused = !"false".equals(System.getProperty("tandem.cuda.fused"));

  public CudaTransformer(ModelWeights weights, CudaBackend backend, PagedKvCache cache) {
    this(weights, backend, cache, GRAPHS_BY_DEFAULT);
  }

  /**
   * Refuses a model whose forward pass these kernels do not compute: Gemma 2's and 3's (GeGLU, their
   * extra norms and scaled embeddings, capped scores, a RoPE base per layer type), which the CPU
   * backends run.
   */
  static void checkSupported(ModelConfig config) {
    if (config.gemma()) {
      throw new IllegalArgumentException(
          "the CUDA backend does not run " + config.architecture().hfName + " yet (GeGLU, Gemma's extra norms and per-layer RoPE bases"
              + " have no kernels); serve it with --compute cpu");
    }
    if (config.activation() != ModelConfig.Activation.SILU) {
      throw new IllegalArgumentException("the CUDA backend has no " + config.activation().hfName
          + " kernel yet (config.json's hidden_act); serve this model with --compute cpu");
    }
    if (config.rotaryDim() != config.headDim() || config.ropeScaling().type().equals("longrope")) {
      throw new IllegalArgumentException("the CUDA rope kernel rotates whole heads without LongRoPE's factors (config.json's"
          + " partial_rotary_factor " + config.rotaryDim() + "/" + config.headDim() + ", rope_scaling "
          + config.ropeScaling().type() + "); serve this model with --compute cpu");
    }
  }

  /** As above; {@code useGraphs} false runs decode steps kernel by kernel too (to time each kernel). */
  public CudaTransformer(ModelWeights weights, CudaBackend backend, PagedKvCache cache, boolean useGraphs) {
    checkSupported(weights.config());
    this.useGraphs = useGraphs;
    this.config = weights.config();
    this.weights = weights;
    this.backend = backend;
    this.kernels = backend.kernels();
    this.gpu = backend.gpu();
    this.pool = backend.pool();
    this.blockSize = cache.blockSize();
    this.kvDtype = cache.dtype();
    LaunchShapes.attention(1, config.numHeads(), config.headDim()); // refuses a head the kernel cannot hold
    LaunchShapes.vectorsPerBlock(cache.blockBytes());
    gpu.makeCurrent();
    // Every matrix to the device now, so the first request does not pay for it.
    backend.weight(weights.embedding());
    backend.weight(weights.lmHead());
    this.layers = new Layer[config.numLayers()];
    for (int l = 0; l < layers.length; l++) {
      LayerWeights w = weights.layer(l);
      for (WeightMatrix m : new WeightMatrix[] {w.q(), w.k(), w.v(), w.o(), w.gate(), w.up(), w.down()}) {
        backend.weight(m);
      }
      layers[l] = new Layer(vector(w.inputNorm()), vector(w.qBias()), vector(w.kBias()), vector(w.vBias()),
          vector(w.qNorm()), vector(w.kNorm()), vector(w.oBias()), vector(w.mlpNorm()), w);
    }
    this.invFreq = vector(RopeFrequencies.of(config, config.maxPositionEmbeddings())); // no LongRoPE here: refused above
    this.finalNorm = vector(weights.finalNorm());
    this.keys = new DeviceBuffer[layers.length];
    this.values = new DeviceBuffer[layers.length];
    for (int l = 0; l < layers.length; l++) {
      keys[l] = own(pool.allocate(cache.keys(l).byteSize()));
      values[l] = own(pool.allocate(cache.values(l).byteSize()));
      keys[l].zero(); // as the host cache starts
      values[l].zero();
    }
    this.mapped = new MemorySegment[2 * layers.length];
    this.mappedPointers = new Gpu.Ptr[2 * layers.length];
  }

  private DeviceBuffer vector(float[] host) {
    if (host == null) {
      return null;
    }
    DeviceBuffer buffer = own(pool.allocate((long) host.length * Float.BYTES));
    buffer.copyFrom(host, host.length);
    return buffer;
  }

  private DeviceBuffer own(DeviceBuffer buffer) {
    owned.add(buffer);
    return buffer;
  }

  /**
   * A step's device memory, one row per token: pooled and returned after the step, or, for a
   * decode graph, owned by it for its life (a graph replays the addresses it recorded).
   */
  private final class Activations implements AutoCloseable {
    final int tokens;
    final int wanted; // rows whose logits the step returns
    final DeviceBuffer x; // (tokens, hidden) residual stream
    final DeviceBuffer xb; // (tokens, hidden) normalised input of a sub-layer
    final DeviceBuffer xb2; // (tokens, hidden) sub-layer output
    final DeviceBuffer q; // (tokens, heads × headDim)
    final DeviceBuffer k; // (tokens, kvHeads × headDim)
    final DeviceBuffer v; // (tokens, kvHeads × headDim)
    final DeviceBuffer att; // (tokens, heads × headDim)
    final DeviceBuffer hb; // (tokens, intermediate) gate, then silu(gate) · up
    final DeviceBuffer hb2; // (tokens, intermediate) up
    final DeviceBuffer meta; // ints: ids, positions, slots, table starts (tokens each), then the block tables
    final DeviceBuffer rows; // (wanted) ints: the rows whose logits are wanted
    final DeviceBuffer picked; // (wanted, hidden) those rows, normalised
    final DeviceBuffer logits; // (wanted, vocab)
    final DeviceBuffer partials; // decode attention's split parts
    int singleCount; // attention's single rows and tiles this step
    int tileCount;

    Activations(int tokens, int metaInts, int wanted, boolean owned) {
      this.tokens = tokens;
      this.wanted = wanted;
      long f = Float.BYTES;
      x = take(tokens * f * config.hiddenSize(), owned);
      xb = take(tokens * f * config.hiddenSize(), owned);
      xb2 = take(tokens * f * config.hiddenSize(), owned);
      q = take(tokens * f * config.qDim(), owned);
      k = take(tokens * f * config.kvDim(), owned);
      v = take(tokens * f * config.kvDim(), owned);
      att = take(tokens * f * config.qDim(), owned);
      hb = take(tokens * f * config.intermediateSize(), owned);
      hb2 = take(tokens * f * config.intermediateSize(), owned);
      meta = take((long) metaInts * Integer.BYTES, owned);
      rows = take(Math.max(1, wanted) * (long) Integer.BYTES, owned);
      picked = take(Math.max(1, wanted) * f * config.hiddenSize(), owned);
      logits = take(Math.max(1, wanted) * f * config.vocabSize(), owned);
      partials = take(LaunchShapes.PARTIAL_FLOATS * f, owned);
    }

    private DeviceBuffer take(long bytes, boolean owned) {
      return owned ? pool.allocate(bytes) : pool.acquire(bytes);
    }

    Gpu.Ptr ids() {
      return meta.ptr();
    }

    Gpu.Ptr positions() {
      return meta.at((long) tokens * Integer.BYTES);
    }

    Gpu.Ptr slots() {
      return meta.at(2L * tokens * Integer.BYTES);
    }

    Gpu.Ptr starts() {
      return meta.at(3L * tokens * Integer.BYTES);
    }

    Gpu.Ptr singles() {
      return meta.at(4L * tokens * Integer.BYTES);
    }

    Gpu.Ptr tiles() {
      return meta.at(5L * tokens * Integer.BYTES);
    }

    Gpu.Ptr tables() {
      return meta.at((long) META_TABLES * tokens * Integer.BYTES);
    }

    /** Attention's split of this step's rows (counts only: the ints are in {@code meta}). */
    void plan(AttentionPlan plan) {
      singleCount = plan.singles().length;
      tileCount = plan.tileCount();
    }

    @Override
    public void close() {
      for (DeviceBuffer b : new DeviceBuffer[] {x, xb, xb2, q, k, v, att, hb, hb2, meta, rows, picked, logits, partials}) {
        b.close();
      }
    }
  }

  /** A decode step of some batch size recorded as a graph, with the memory it replays. */
  private final class DecodeGraph implements AutoCloseable {
    final Activations a;
    final int metaCapacity;
    Gpu.Graph graph;

    DecodeGraph(int tokens, int metaCapacity) {
      this.metaCapacity = metaCapacity;
      this.a = new Activations(tokens, metaCapacity, tokens, true);
    }

    @Override
    public void close() {
      if (graph != null) {
        graph.close();
      }
      a.close();
    }
  }

  @Override
  public float[][] forward(
      List<Transformer.Slice> slices, PagedKvCache cache, IntConsumer layerKvWritten, Transformer.PositionLogits positionLogits) {
    gpu.makeCurrent();
    mapHostCache(cache);
    int tokens = 0;
    int tableInts = 0;
    boolean decodeOnly = true;
    int wanted = 0;
    for (Transformer.Slice s : slices) {
      tokens += s.count();
      tableInts += s.blockTable().length;
      decodeOnly &= s.count() == 1;
      wanted += s.wantLogits() ? 1 : 0;
    }
    // The step's ints in one copy, each region `tokens` long but the last: ids, positions, cache
    // slots, each row's table start, attention's single rows, its tiles, then the block tables.
    int[] meta = new int[META_TABLES * tokens + Math.max(1, tableInts)];
    int[] rows = new int[wanted]; // the last token of each slice that wants logits
    boolean[] continues = new boolean[tokens]; // row t is the next position of row t - 1's slice
    int t = 0;
    int table = META_TABLES * tokens;
    int row = 0;
    for (Transformer.Slice s : slices) {
      System.arraycopy(s.blockTable(), 0, meta, table, s.blockTable().length);
      for (int j = 0; j < s.count(); j++, t++) {
        int id = s.tokens()[s.from() + j];
        if (id < 0 || id >= config.vocabSize()) {
          throw new IllegalArgumentException("token id " + id + " is outside the vocabulary (" + config.vocabSize() + ")");
        }
        int p = s.startPosition() + j;
        meta[t] = id;
        meta[tokens + t] = p;
        meta[2 * tokens + t] = s.blockTable()[p / blockSize] * blockSize + p % blockSize;
        meta[3 * tokens + t] = table - META_TABLES * tokens;
        continues[t] = j > 0;
      }
      if (s.wantLogits()) {
        rows[row++] = t - 1;
      }
      table += s.blockTable().length;
    }
    AttentionPlan plan = AttentionPlan.of(tokens, r -> continues[r], config.headDim());
    System.arraycopy(plan.singles(), 0, meta, 4 * tokens, plan.singles().length);
    System.arraycopy(plan.tiles(), 0, meta, 5 * tokens, plan.tiles().length);
    lastHiddenRow = new int[slices.size()];
    for (int i = 0, r = 0; i < slices.size(); i++) {
      lastHiddenRow[i] = slices.get(i).wantLogits() ? r++ : -1;
    }
    lastHidden = null;
    lastGraph = null;
    float[] all = null;
    if (useGraphs && decodeOnly && wanted == tokens && tokens <= GRAPH_MAX_TOKENS && layerKvWritten == null && positionLogits == null) {
      try {
        all = decodeFromGraph(tokens, meta, rows, plan);
      } catch (CudaException e) {
        LOG.warn("CUDA graphs unavailable ({}); decode steps run kernel by kernel from now on", e.getMessage());
        useGraphs = false;
        closeGraphs();
      }
    }
    if (all == null) {
      try (Activations a = new Activations(tokens, meta.length, wanted, false)) {
        a.meta.copyFrom(meta, meta.length);
        a.rows.copyFrom(rows, wanted);
        a.plan(plan);
        run(a, layerKvWritten);
        if (positionLogits != null) {
          positionLogits(slices, a, positionLogits);
        }
        all = new float[wanted * config.vocabSize()];
        a.logits.copyTo(all, all.length);
        lastHidden = new float[wanted * config.hiddenSize()];
        a.picked.copyTo(lastHidden, lastHidden.length);
        gpu.synchronize(); // every entry is in the host cache before the step ends
      }
    }
    float[][] result = new float[slices.size()][];
    int vocab = config.vocabSize();
    row = 0;
    for (int i = 0; i < slices.size(); i++) {
      if (slices.get(i).wantLogits()) {
        result[i] = Arrays.copyOfRange(all, row * vocab, (row + 1) * vocab);
        row++;
      }
    }
    return result;
  }

  /**
   * A decode step (one token per sequence) replayed from the graph recorded for its batch size:
   * one launch for the whole pass instead of a few hundred. The step's ints go into the graph's
   * own buffers first; a step whose block tables outgrew them records a new graph.
   */
  private float[] decodeFromGraph(int tokens, int[] meta, int[] rows, AttentionPlan plan) {
    DecodeGraph g = graphs.get(tokens);
    if (g != null && g.metaCapacity < meta.length) {
      graphs.remove(tokens).close();
      g = null;
    }
    if (g == null) {
      g = new DecodeGraph(tokens, 2 * meta.length); // room for the tables to double
      graphs.put(tokens, g);
    }
    g.a.meta.copyFrom(meta, meta.length);
    g.a.rows.copyFrom(rows, rows.length);
    g.a.plan(plan); // every row alone in a decode step: the same counts at every replay
    if (g.graph == null) {
      gpu.beginCapture();
      try {
        run(g.a, null);
      } catch (RuntimeException e) {
        gpu.endCapture().close(); // a partial recording is never launched
        graphs.remove(tokens).close();
        throw e;
      }
      g.graph = gpu.endCapture();
    }
    g.graph.launch();
    float[] all = new float[tokens * config.vocabSize()];
    g.a.logits.copyTo(all, all.length); // waits for the graph
    lastGraph = g;
    return all;
  }

  @Override
  public float[] finalHidden(int slice) {
    if (lastHiddenRow == null || slice >= lastHiddenRow.length || lastHiddenRow[slice] < 0) {
      throw new IllegalStateException("slice " + slice + " of the last pass wanted no logits");
    }
    if (lastHidden == null) { // a replayed decode step: its rows are still in the graph's buffer
      gpu.makeCurrent();
      lastHidden = new float[lastGraph.a.wanted * config.hiddenSize()];
      lastGraph.a.picked.copyTo(lastHidden, lastHidden.length);
    }
    int hidden = config.hiddenSize();
    return Arrays.copyOfRange(lastHidden, lastHiddenRow[slice] * hidden, (lastHiddenRow[slice] + 1) * hidden);
  }

  /**
   * The pass itself, launches only (so that it can be recorded): embeddings, every layer, then the
   * final norm and LM head over the wanted rows into {@code a.logits}. With a layer listener the
   * host waits after each layer, then tells it.
   */
  private void run(Activations a, IntConsumer layerKvWritten) {
    int tokens = a.tokens;
    // Token embeddings.
    kernels.embed(a.ids(), tokens, backend.weight(weights.embedding()).ptr(), weights.embedding().dtype(),
        config.hiddenSize(), a.x.ptr());
    // The first layer's input norm alone; every later norm takes the residual add before it.
    kernels.rmsNorm(a.x.ptr(), a.xb.ptr(), layers[0].inputNorm().ptr(), config.rmsNormEps(), tokens, config.hiddenSize());
    for (int l = 0; l < layers.length; l++) {
      attentionBlock(l, a, tokens, a.positions(), a.slots(), a.starts(), a.tables());
      if (layerKvWritten != null) {
        gpu.synchronize(); // the layer's entries have reached the host cache
        layerKvWritten.accept(l);
      }
      mlpBlock(layers[l], l + 1 < layers.length ? layers[l + 1] : null, a, tokens);
    }
    if (a.wanted > 0) {
      head(a.x, a.rows, a.wanted, a.picked, a.logits);
    }
  }

  private void attentionBlock(
      int l, Activations a, int tokens, Gpu.Ptr positions, Gpu.Ptr slots, Gpu.Ptr starts, Gpu.Ptr tables) {
    Layer layer = layers[l];
    LayerWeights w = layer.weights();
    int hidden = config.hiddenSize();
    float eps = config.rmsNormEps();
    // q, k, v projections of the normalised input in a.xb (+ bias for Qwen2).
    matmuls(a.xb, tokens, w.q(), a.q, w.k(), a.k, w.v(), a.v);
    addBias(a.q, layer.qBias(), tokens, config.qDim());
    addBias(a.k, layer.kBias(), tokens, config.kvDim());
    addBias(a.v, layer.vBias(), tokens, config.kvDim());
    // Qwen3: RMSNorm of each query and key head.
    if (layer.qNorm() != null) {
      kernels.rmsNorm(a.q.ptr(), a.q.ptr(), layer.qNorm().ptr(), eps, tokens * config.numHeads(), config.headDim());
      kernels.rmsNorm(a.k.ptr(), a.k.ptr(), layer.kNorm().ptr(), eps, tokens * config.numKvHeads(), config.headDim());
    }
    // Rotary positions.
    kernels.rope(a.q.ptr(), tokens, config.numHeads(), config.headDim(), positions, invFreq.ptr());
    kernels.rope(a.k.ptr(), tokens, config.numKvHeads(), config.headDim(), positions, invFreq.ptr());
    // New keys and values into the device cache and the host cache, then attention over the device cache.
    kernels.kvWrite(a.k.ptr(), a.v.ptr(), slots, tokens, config.kvDim(), kvDtype, keys[l].ptr(),
        values[l].ptr(), mappedPointers[2 * l], mappedPointers[2 * l + 1]);
    kernels.attention(a.q.ptr(), a.att.ptr(), positions, tables, starts, a.singles(), a.singleCount, a.tiles(),
        a.tileCount, keys[l].ptr(), values[l].ptr(), kvDtype, blockSize, config.numHeads(), config.numKvHeads(),
        config.headDim(), a.partials.ptr());
    // Output projection, then the residual and the MLP's pre-norm in one launch.
    matmul(a.att, tokens, w.o(), a.xb2);
    addBias(a.xb2, layer.oBias(), tokens, hidden);
    addRmsNorm(a, layer.mlpNorm(), tokens);
  }

  /** The residual a.x += a.xb2, then a.xb = the norm of a.x: one launch, or two unfused. */
  private void addRmsNorm(Activations a, DeviceBuffer norm, int tokens) {
    int hidden = config.hiddenSize();
    if (fused) {
      kernels.addRmsNorm(a.x.ptr(), a.xb2.ptr(), a.xb.ptr(), norm.ptr(), config.rmsNormEps(), tokens, hidden);
    } else {
      kernels.add(a.x.ptr(), a.xb2.ptr(), (long) tokens * hidden, tokens * hidden);
      kernels.rmsNorm(a.x.ptr(), a.xb.ptr(), norm.ptr(), config.rmsNormEps(), tokens, hidden);
    }
  }

  /**
   * SwiGLU of the normalised input in a.xb: down(silu(gate(x)) · up(x)), then the residual, with
   * the next layer's input norm in the same launch ({@code next} null: the last layer, whose
   * final norm the head applies to the rows it keeps).
   */
  private void mlpBlock(Layer layer, Layer next, Activations a, int tokens) {
    int hidden = config.hiddenSize();
    int inter = config.intermediateSize();
    LayerWeights w = layer.weights();
    matmuls(a.xb, tokens, w.gate(), a.hb, w.up(), a.hb2, null, null);
    kernels.siluMul(a.hb.ptr(), a.hb2.ptr(), (long) tokens * inter);
    matmul(a.hb, tokens, w.down(), a.xb2);
    if (next != null) {
      addRmsNorm(a, next.inputNorm(), tokens);
    } else {
      kernels.add(a.x.ptr(), a.xb2.ptr(), (long) tokens * hidden, tokens * hidden);
    }
  }

  /** Final norm and LM head over every asked-for prompt position, a few tokens at a time. */
  private void positionLogits(List<Transformer.Slice> slices, Activations a, Transformer.PositionLogits out) {
    int vocab = config.vocabSize();
    int first = 0; // row of the slice's first token
    for (int i = 0; i < slices.size(); i++) {
      Transformer.Slice s = slices.get(i);
      int wanted = s.positionLogits();
      for (int j = 0; j < wanted; j += PROMPT_LOGITS_CHUNK) {
        int n = Math.min(PROMPT_LOGITS_CHUNK, wanted - j);
        int[] rows = new int[n];
        for (int r = 0; r < n; r++) {
          rows[r] = first + j + r;
        }
        float[] logits = headLogits(a, rows);
        for (int r = 0; r < n; r++) {
          out.accept(i, s.startPosition() + j + r, Arrays.copyOfRange(logits, r * vocab, (r + 1) * vocab));
        }
      }
      first += s.count();
    }
  }

  /** Logits {@code (rows.length, vocab)} of the residual stream's given rows, copied back. */
  private float[] headLogits(Activations a, int[] rows) {
    int n = rows.length;
    float[] logits = new float[n * config.vocabSize()];
    try (DeviceBuffer index = pool.acquire((long) n * Integer.BYTES);
        DeviceBuffer picked = pool.acquire((long) n * config.hiddenSize() * Float.BYTES);
        DeviceBuffer out = pool.acquire((long) n * config.vocabSize() * Float.BYTES)) {
      index.copyFrom(rows, n);
      head(a.x, index, n, picked, out);
      out.copyTo(logits, logits.length);
    }
    return logits;
  }

  /** Final norm and LM head: {@code out (n, vocab)} for rows {@code rows (n ints)} of {@code x}. */
  private void head(DeviceBuffer x, DeviceBuffer rows, int n, DeviceBuffer picked, DeviceBuffer out) {
    int hidden = config.hiddenSize();
    kernels.gatherRows(x.ptr(), rows.ptr(), n, hidden, picked.ptr());
    kernels.rmsNorm(picked.ptr(), picked.ptr(), finalNorm.ptr(), config.rmsNormEps(), n, hidden);
    matmul(picked, n, weights.lmHead(), out);
  }

  private void matmul(DeviceBuffer x, int tokens, WeightMatrix w, DeviceBuffer out) {
    kernels.matmul(x.ptr(), tokens, backend.weight(w).ptr(), w.dtype(), w.rows(), w.cols(), out.ptr());
  }

  /**
   * Two or three products of the same input ({@code w2} null: two): one matrix-vector launch for
   * all of them when the kernel takes the tokens and the matrices agree in type and width, else a
   * launch each.
   */
  private void matmuls(DeviceBuffer x, int tokens, WeightMatrix w0, DeviceBuffer out0, WeightMatrix w1, DeviceBuffer out1,
      WeightMatrix w2, DeviceBuffer out2) {
    boolean together = fused && LaunchShapes.usesMatvec(tokens) && w1.dtype() == w0.dtype() && w1.cols() == w0.cols()
        && (w2 == null || (w2.dtype() == w0.dtype() && w2.cols() == w0.cols()));
    if (!together) {
      matmul(x, tokens, w0, out0);
      matmul(x, tokens, w1, out1);
      if (w2 != null) {
        matmul(x, tokens, w2, out2);
      }
      return;
    }
    Gpu.Ptr p1 = backend.weight(w1).ptr();
    kernels.matvecs(x.ptr(), tokens, w0.dtype(), w0.cols(), backend.weight(w0).ptr(), w0.rows(), out0.ptr(),
        p1, w1.rows(), out1.ptr(),
        w2 == null ? p1 : backend.weight(w2).ptr(), w2 == null ? 0 : w2.rows(), w2 == null ? out1.ptr() : out2.ptr());
  }

  private void addBias(DeviceBuffer a, DeviceBuffer bias, int rows, int width) {
    if (bias != null) {
      kernels.add(a.ptr(), bias.ptr(), (long) rows * width, width);
    }
  }

  @Override
  public void hostBlocksWritten(PagedKvCache cache, int[] blocks, int from) {
    copyBlocks(cache, blocks, from, true);
  }

  @Override
  public void deviceBlocksWritten(PagedKvCache cache, int[] blocks, int from) {
    copyBlocks(cache, blocks, from, false);
  }

  /**
   * Copies blocks {@code blocks[from..]} of every layer from the host cache to the device copy
   * ({@code toDevice}) or back, and waits: the list goes back to the pool, and the copy is whole
   * before anyone reads either side.
   */
  private void copyBlocks(PagedKvCache cache, int[] blocks, int from, boolean toDevice) {
    if (from >= blocks.length) {
      return;
    }
    gpu.makeCurrent();
    mapHostCache(cache);
    int count = blocks.length - from;
    try (DeviceBuffer list = pool.acquire((long) count * Integer.BYTES)) {
      list.copyFrom(Arrays.copyOfRange(blocks, from, blocks.length), count);
      for (int l = 0; l < layers.length; l++) {
        for (int side = 0; side < 2; side++) { // keys, then values
          Gpu.Ptr host = mappedPointers[2 * l + side];
          Gpu.Ptr device = (side == 0 ? keys[l] : values[l]).ptr();
          kernels.copyBlocks(toDevice ? host : device, toDevice ? device : host, list.ptr(), count, cache.blockBytes());
        }
      }
      gpu.synchronize();
    }
  }

  /**
   * Times the block copy kernel an import's commit runs, between device memory and mapped host
   * memory, both ways, over {@code bytes} of scratch memory (64 KiB blocks; best of three after a
   * warm-up).
   */
  @Override
  public java.util.Optional<KvHandoff.HostDeviceCopy> measureHostDeviceCopy(long bytes) {
    long block = 64 << 10;
    int count = (int) Math.max(1, Math.min(Integer.MAX_VALUE / 16, bytes / block));
    long total = count * block;
    gpu.makeCurrent();
    try (Arena arena = Arena.ofShared();
        DeviceBuffer device = pool.allocate(total);
        DeviceBuffer list = pool.acquire((long) count * Integer.BYTES)) {
      MemorySegment host = arena.allocate(total, 4096);
      Gpu.Ptr mapped = new Gpu.Ptr(gpu.mapHost(host));
      try {
        list.copyFrom(java.util.stream.IntStream.range(0, count).toArray(), count);
        double toDevice = bestSeconds(() -> kernels.copyBlocks(mapped, device.ptr(), list.ptr(), count, block));
        double toHost = bestSeconds(() -> kernels.copyBlocks(device.ptr(), mapped, list.ptr(), count, block));
        return java.util.Optional.of(new KvHandoff.HostDeviceCopy(total / toDevice, total / toHost));
      } finally {
        gpu.unmapHost(host);
      }
    }
  }

  private double bestSeconds(Runnable copy) {
    copy.run();
    gpu.synchronize();
    double best = Double.MAX_VALUE;
    for (int i = 0; i < 3; i++) {
      long t0 = System.nanoTime();
      copy.run();
      gpu.synchronize();
      best = Math.min(best, Math.max(1e-9, (System.nanoTime() - t0) / 1e9));
    }
    return best;
  }

  @Override
  public java.util.Optional<KvHandoff.DeviceKv> deviceKv() {
    List<MemorySegment> k = new ArrayList<>(), v = new ArrayList<>();
    for (int l = 0; l < layers.length; l++) {
      k.add(MemorySegment.ofAddress(keys[l].ptr().address()).reinterpret(keys[l].bytes()));
      v.add(MemorySegment.ofAddress(values[l].ptr().address()).reinterpret(values[l].bytes()));
    }
    return java.util.Optional.of(new KvHandoff.DeviceKv(List.copyOf(k), List.copyOf(v)));
  }

  /** Registers the host cache's segments with the driver, again after they moved. */
  private void mapHostCache(PagedKvCache cache) {
    for (int l = 0; l < layers.length; l++) {
      map(2 * l, cache.keys(l));
      map(2 * l + 1, cache.values(l));
    }
  }

  private void map(int i, MemorySegment segment) {
    if (mapped[i] != null && mapped[i].address() == segment.address() && mapped[i].byteSize() == segment.byteSize()) {
      return;
    }
    unmap(i);
    if (segment.byteSize() > Integer.MAX_VALUE) {
      throw new CudaException("a KV cache layer of " + segment.byteSize() + " bytes is past what one mapping takes here (2 GiB)");
    }
    mappedPointers[i] = new Gpu.Ptr(gpu.mapHost(segment));
    mapped[i] = segment;
  }

  private void unmap(int i) {
    if (mapped[i] != null) {
      gpu.unmapHost(mapped[i]);
      mapped[i] = null;
      mappedPointers[i] = null;
    }
  }

  /** Layer {@code l}'s keys (or values) as the device holds them, for tests. */
  byte[] deviceCache(int l, boolean ofKeys) {
    gpu.makeCurrent();
    DeviceBuffer from = ofKeys ? keys[l] : values[l];
    byte[] bytes = new byte[(int) from.bytes()];
    from.copyTo(bytes);
    return bytes;
  }

  @Override
  public void hostCacheMoving() {
    gpu.makeCurrent();
    gpu.synchronize();
    closeGraphs(); // they write through the old mapping
    for (int i = 0; i < mapped.length; i++) {
      unmap(i);
    }
  }

  private void closeGraphs() {
    graphs.values().forEach(DecodeGraph::close);
    graphs.clear();
  }

  /** Releases the graphs, the host cache's registration and this pass's device memory (the weights stay the backend's). */
  @Override
  public void close() {
    hostCacheMoving();
    owned.forEach(DeviceBuffer::close);
  }
}
