package dev.tandem.engine.builtin;

import dev.tandem.common.ThinkingBudget;
import dev.tandem.engine.Engine;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvHandoff;
import dev.tandem.engine.RequestOutput;
import dev.tandem.common.PrefillCost;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ComputeBackends;
import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.kv.BlockPool;
import dev.tandem.engine.model.ClassifierConfig;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelFormatException;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.engine.model.PoolingConfig;
import dev.tandem.engine.sched.ScheduledBatch;
import dev.tandem.engine.sched.Scheduler;
import dev.tandem.engine.sched.SchedulerConfig;
import dev.tandem.engine.sched.SchedulingEngine;
import dev.tandem.engine.sched.Sequence;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The built-in engine: a real transformer on a compute backend, with a paged KV cache, prefix reuse
 * across requests, continuous batching with chunked prefill, and vLLM's sampling parameters.
 *
 * <p>Ownership: owns the mapped weights, the KV cache memory and the compute backend; {@link
 * #close()} releases all three. Threading: owned by one thread (see {@link Engine}).
 */
public final class BuiltinEngine extends SchedulingEngine implements KvHandoff {
  private static final Logger LOG = LoggerFactory.getLogger(BuiltinEngine.class);
  private final ModelWeights weights;
  private final String keyRotation; // see KvHandoff.keyRotation
  private final PrefillCost.Attention attention; // the model's sliding layers, as the prefill cost counts them
  private final ComputeBackend backend;
  private final PagedKvCache cache;
  private final ForwardPass transformer;
  private final Sampler sampler = new Sampler();
  private final OutputConstraints constraints;
  /** Served as a cross-encoder ({@code --hf-overrides}): what a request asking for its pooled output gets; null: the hidden state. */
  private final ClassifierConfig classifier;
  /** No language-model head, or a sequence classifier's: only requests for the pooled output are taken. */
  private final boolean poolingOnly;
  private final EngineInfo info;
  private PromptLayerListener promptLayerListener;
  private final java.util.Map<String, Scheduler.Imported> pendingImports = new java.util.HashMap<>();
  // LoRA adapters new requests may name, by that name in the order loaded: replaced whole (under
  // loraChanges) as adapters load and unload, read by the engine thread and by any other.
  private volatile java.util.Map<String, LoraAdapter> adapters;
  // Unloaded adapters whose requests still run: they finish with it, then it and its cached KV go.
  private final java.util.Map<String, LoraAdapter> retiring = new java.util.concurrent.ConcurrentHashMap<>();
  private final Object loraChanges = new Object();
  private final int maxLoraRank;

  /**
   * Loads the model and allocates the KV cache.
   *
   * @throws ModelFormatException naming the file and field when the model cannot be loaded
   */
  public static BuiltinEngine open(BuiltinConfig config) {
    ModelConfig model = ModelConfig.read(config.modelDir());
    ComputeBackend backend = ComputeBackends.create(config.compute(), config.threads());
    ModelWeights weights = null;
    try {
      refuseQuantizedOnGpu(config.quantization(), backend);
      weights = ModelWeights.load(config.modelDir(), model, config.quantization());
      return new BuiltinEngine(weights, backend, config);
    } catch (RuntimeException e) {
      backend.close(); // a GPU's context and memory, a CPU backend's threads
      if (weights != null) {
        weights.close();
      }
      throw e;
    }
  }

  /** Quantized weights run on the CPU backends only: the GPU kernels read f32, f16 and bf16. */
  private static void refuseQuantizedOnGpu(DType quantization, ComputeBackend backend) {
    if (quantization != null && quantization.quantized() && backend instanceof CudaBackend) {
      throw new IllegalArgumentException("--quantization " + quantization.shortName()
          + " runs on the CPU (--compute cpu); the GPU kernels read f32, f16 and bf16 weights");
    }
  }

  public BuiltinEngine(ModelWeights weights, ComputeBackend backend, BuiltinConfig config) {
    ModelConfig model = weights.config();
    DType kvDtype = config.kvCacheDtype() != null ? config.kvCacheDtype() : model.torchDtype();
    long blockBytes = model.kvBytesPerToken(kvDtype) * config.blockSize();
    int blocks = (int) Math.min(Integer.MAX_VALUE, config.kvCacheBytes() / blockBytes);
    if (blocks < 1) {
      throw new IllegalArgumentException(
          "KV cache of " + config.kvCacheBytes() + " bytes holds no block; one block of "
              + config.blockSize() + " tokens needs " + blockBytes + " bytes (KV in " + kvDtype.shortName() + ")");
    }
    if (backend instanceof CudaBackend) {
      CudaTransformer.checkSupported(model);
      refuseQuantizedOnGpu(weights.matrixType(), backend);
      if (!config.loraModules().isEmpty()) {
        throw new IllegalArgumentException("--lora-modules: LoRA adapters are applied on the CPU (--compute cpu); the GPU kernels do not apply them yet");
      }
    }
    String name = config.modelName() != null ? config.modelName() : config.modelDir().getFileName().toString();
    java.util.Map<String, LoraAdapter> loaded = loadAdapters(config, model);
    if (loaded.containsKey(name)) {
      throw new IllegalArgumentException("--lora-modules: " + sameNameAsModel(name));
    }
    int context = contextLength(model, config, backend instanceof CudaBackend);
    String rotation = model.ropeScaling().factorSet(context);
    logLongRope(model.ropeScaling(), rotation, context);
    super(
        new Scheduler(
            new SchedulerConfig(
                config.maxNumSeqs(), config.maxBatchedTokens(), config.chunkedPrefill(), context, model.eosTokenIds()),
            new BlockPool(blocks, config.blockSize())));
    this.weights = weights;
    this.adapters = loaded;
    this.maxLoraRank = config.maxLoraRank();
    this.keyRotation = rotation;
    this.attention = model.slidingWindow() == 0 ? PrefillCost.Attention.FULL
        : new PrefillCost.Attention(model.slidingWindow(), (double) model.slidingLayers().cardinality() / model.numLayers());
    this.backend = backend;
    this.cache = new PagedKvCache(model, blocks, config.blockSize(), kvDtype);
    try {
      this.transformer = backend instanceof CudaBackend cuda
          ? new CudaTransformer(weights, cuda, cache)
          : new Transformer(weights, backend, config.blockSize(), context);
    } catch (RuntimeException e) {
      cache.close(); // e.g. a model the GPU kernels cannot hold: the host cache goes back at once
      throw e;
    }
    this.constraints = new OutputConstraints(config.modelDir(), model.vocabSize(), model.eosTokenIds());
    if (config.speculative().enabled()) {
      // Each proposed position is drawn under its own mask, with the grammar advanced past the
      // positions kept before it; a proposal is cut where the grammar would refuse it.
      scheduler.speculate(config.speculative(), seq -> true, this::usableDrafts);
    }
    EnumSet<EngineInfo.Feature> features = EnumSet.of(
        EngineInfo.Feature.TEMPERATURE,
        EngineInfo.Feature.TOP_P,
        EngineInfo.Feature.TOP_K,
        EngineInfo.Feature.MIN_P,
        EngineInfo.Feature.SEED,
        EngineInfo.Feature.PRESENCE_PENALTY,
        EngineInfo.Feature.FREQUENCY_PENALTY,
        EngineInfo.Feature.REPETITION_PENALTY,
        EngineInfo.Feature.LOGPROBS,
        EngineInfo.Feature.STOP_TOKEN_IDS,
        EngineInfo.Feature.MIN_TOKENS,
        EngineInfo.Feature.ALLOWED_TOKEN_IDS,
        EngineInfo.Feature.BAD_WORDS,
        EngineInfo.Feature.CACHE_SALT,
        EngineInfo.Feature.LOGIT_BIAS,
        EngineInfo.Feature.THINKING_BUDGET);
    if (constraints.available()) {
      features.add(EngineInfo.Feature.STRUCTURED_OUTPUTS);
    }
    this.classifier = classifier(config, weights);
    boolean scoreHead = classifier != null && classifier.readsHiddenState(); // a sequence classifier's checkpoint
    this.poolingOnly = weights.headless() || scoreHead;
    PoolingConfig pooling = PoolingConfig.read(config.modelDir());
    if (poolingOnly) {
      features.add(EngineInfo.Feature.POOLING_ONLY);
    }
    if (scoreHead) {
      features.add(EngineInfo.Feature.CLASSIFY);
    }
    if (classifier != null && classifier.labels() == 1) {
      features.add(EngineInfo.Feature.CROSS_ENCODER); // its pooled output is the relevance logit: no embeddings
    } else if (classifier != null) {
      LOG.info("a sequence classifier of {} labels: served through /classify", classifier.labels());
    } else if (pooling.refusal() != null) {
      LOG.warn("embeddings: not served: {}", pooling.refusal());
    } else {
      features.add(EngineInfo.Feature.EMBEDDINGS);
      if (pooling.matryoshka()) {
        features.add(EngineInfo.Feature.MATRYOSHKA);
      }
    }
    this.info =
        new EngineInfo(
            "builtin-" + backend.name(),
            name,
            config.blockSize(),
            blocks,
            model.vocabSize(),
            scheduler.maxContextLength(),
            model.kvBytesPerToken(kvDtype),
            kvDtype.shortName(),
            features,
            model.eosTokenIds(),
            scheduler.batching());
  }

  /** Reads every adapter of {@code --lora-modules} for this model, logging what each changes. */
  private static java.util.Map<String, LoraAdapter> loadAdapters(BuiltinConfig config, ModelConfig model) {
    java.util.Map<String, LoraAdapter> loaded = new java.util.LinkedHashMap<>();
    for (LoraAdapter.Source source : config.loraModules()) {
      if (loaded.containsKey(source.name())) {
        throw new IllegalArgumentException("--lora-modules names adapter '" + source.name() + "' twice");
      }
      LoraAdapter adapter = LoraAdapter.load(source, model, config.maxLoraRank());
      LOG.info("LoRA adapter '{}' from {}: rank {}, scaling {}, {} projections changed", adapter.name(), adapter.dir(), adapter.rank(),
          adapter.scaling(), adapter.deltaCount());
      loaded.put(source.name(), adapter);
    }
    return java.util.Collections.unmodifiableMap(loaded);
  }

  private static String sameNameAsModel(String name) {
    return "adapter '" + name + "' has the served model's name; requests could not tell them apart";
  }

  @Override
  public List<String> loraAdapters() {
    return List.copyOf(adapters.keySet());
  }

  @Override
  public void loadLoraAdapter(String name, java.nio.file.Path dir) {
    if (backend instanceof CudaBackend) {
      throw new IllegalArgumentException("LoRA adapters are applied on the CPU (--compute cpu); the GPU kernels do not apply them yet");
    }
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("a LoRA adapter needs a name for requests to give as their model");
    }
    if (name.equals(info.modelName())) {
      throw new IllegalArgumentException(sameNameAsModel(name));
    }
    refuseTaken(name); // before reading the files, as after
    LoraAdapter adapter = LoraAdapter.load(new LoraAdapter.Source(name, dir), weights.config(), maxLoraRank);
    synchronized (loraChanges) {
      refuseTaken(name);
      changeAdapters(next -> next.put(name, adapter));
    }
    LOG.info("LoRA adapter '{}' loaded from {}: rank {}, scaling {}, {} projections changed", name, adapter.dir(), adapter.rank(),
        adapter.scaling(), adapter.deltaCount());
  }

  /** Publishes a changed copy of the adapters (readers on any thread see the old map or the new, whole). Under loraChanges. */
  private void changeAdapters(java.util.function.Consumer<java.util.Map<String, LoraAdapter>> change) {
    var next = new java.util.LinkedHashMap<>(adapters);
    change.accept(next);
    adapters = java.util.Collections.unmodifiableMap(next);
  }

  /** Refuses a name an adapter has, or had and still runs requests with. */
  private void refuseTaken(String name) {
    if (adapters.containsKey(name)) {
      throw new IllegalArgumentException("LoRA adapter '" + name + "' is already loaded");
    }
    if (retiring.containsKey(name)) {
      throw new IllegalArgumentException("LoRA adapter '" + name + "' was unloaded and still runs requests; load it again once they end");
    }
  }

  @Override
  public int unloadLoraAdapter(String name) {
    synchronized (loraChanges) {
      LoraAdapter adapter = adapters.get(name);
      if (adapter == null) {
        throw new IllegalArgumentException("LoRA adapter '" + name + "' is not loaded"
            + (retiring.containsKey(name) ? " (it was unloaded; requests still run with it)" : adapters.isEmpty() ? "" : " (loaded: " + String.join(", ", adapters.keySet()) + ")"));
      }
      changeAdapters(next -> next.remove(name));
      retiring.put(name, adapter);
    }
    retireAdapters();
    int running = scheduler.requestsWith(name);
    if (running > 0) {
      LOG.info("LoRA adapter '{}' unloaded: takes no new requests; goes when its {} running request(s) end", name, running);
    }
    return running;
  }

  /** Drops every unloaded adapter no request runs with any more, and the KV blocks cached under it. On the engine thread. */
  private void retireAdapters() {
    if (retiring.isEmpty()) {
      return;
    }
    for (String name : List.copyOf(retiring.keySet())) {
      if (scheduler.requestsWith(name) == 0) {
        int forgotten = scheduler.pool().forget(dev.tandem.common.BlockHasher.salt(name));
        synchronized (loraChanges) {
          retiring.remove(name);
        }
        LOG.info("LoRA adapter '{}' gone: no request runs with it; {} cached KV block(s) under it forgotten", name, forgotten);
      }
    }
  }

  @Override
  protected PrefillCost.Attention attention() {
    return attention;
  }

  /**
   * The longest context served: {@code --max-context-length}, else the model's {@code
   * max_position_embeddings}. The CUDA kernels attend over every earlier position, so on a GPU a
   * model with a sliding window is served only as far as the window reaches, where full attention
   * is the same computation (vLLM's {@code --disable-sliding-window} caps a model the same way).
   */
  private static int contextLength(ModelConfig model, BuiltinConfig config, boolean cuda) {
    int window = model.slidingWindow();
    if (!cuda || window == 0 || window >= model.maxPositionEmbeddings()) {
      return config.maxContextLength() > 0 ? config.maxContextLength() : model.maxPositionEmbeddings();
    }
    if (config.maxContextLength() > window) {
      throw new IllegalArgumentException(
          "a context of " + config.maxContextLength() + " tokens is longer than the model's sliding window (config.json's sliding_window, "
              + window + "); the CUDA backend has no sliding-window attention, so it serves this model up to "
              + window + " tokens: give at most that as --max-context-length, or serve it with --compute cpu");
    }
    return config.maxContextLength() > 0 ? config.maxContextLength() : window;
  }

  /** Which of LongRoPE's factor sets this engine runs every sequence with, and how to get the other. */
  private static void logLongRope(ModelConfig.RopeScaling s, String factorSet, int context) {
    if (factorSet.isEmpty()) {
      return;
    }
    if (factorSet.equals(ModelConfig.RopeScaling.LONG_FACTORS)) {
      LOG.info("LongRoPE: long factors for every sequence (a context of {} is beyond the original {}; --max-context-length {} "
          + "runs the short ones, as the model was trained for short prompts)", context, s.originalMaxPositions(), s.originalMaxPositions());
    } else {
      LOG.info("LongRoPE: short factors (a context of {} is within the original {})", context, s.originalMaxPositions());
    }
  }

  @Override
  public EngineInfo info() {
    return described(info);
  }

  public ModelConfig modelConfig() {
    return weights.config();
  }

  /** Bytes of weights one decode step reads (every matrix once). */
  public long bytesReadPerToken() {
    return weights.bytesReadPerToken();
  }

  /** Time this engine has spent on constrained decoding (token masks, matchers), in nanoseconds. */
  public long constrainedDecodingNanos() {
    return constraints.nanos();
  }

  /** Weights in the matrices one decode step reads (every layer's seven and the LM head). */
  public long matrixParameters() {
    return weights.matrixParameters();
  }

  /** The KV cache's memory, for export and import of blocks. */
  public PagedKvCache kvCache() {
    return cache;
  }

  @Override
  public void add(EngineRequest request) {
    checkRequest(request);
    Sampler.State state = samplingState(request);
    Sequence seq = scheduler.add(request);
    seq.setEngineState(state);
  }

  /**
   * A new sequence's sampling state, its output's grammar included (compiled before it is queued),
   * moved past a migrated stream's output so far (its prompt's last {@code resumedOutputTokens}).
   */
  private Sampler.State samplingState(EngineRequest request) {
    Sampler.State state = new Sampler.State(request.sampling(), request.promptTokens());
    if (request.sampling().wantsPromptLogprobs()) {
      state.promptLogprobs = new dev.tandem.common.TokenLogprob[request.promptTokens().length - 1];
    }
    state.grammar = constraints.start(request);
    if (state.grammar != null) {
      state.endTokens = constraints.endTokens(request);
    }
    ThinkingBudget budget = request.sampling().thinkingBudget();
    if (budget != null) {
      state.thinking = new ThinkingBudgetTracker(budget);
    }
    int[] prompt = request.promptTokens();
    for (int i = prompt.length - request.resumedOutputTokens(); i < prompt.length; i++) {
      try {
        accepted(state, prompt[i]);
      } catch (IllegalStateException e) {
        throw new IllegalArgumentException("structured output: the output to resume after leaves its grammar at token " + prompt[i], e);
      }
    }
    return state;
  }

  /** Moves a sequence's sampling state past its output token {@code token}. */
  private void accepted(Sampler.State state, int token) {
    if (state.grammar != null) {
      constraints.accept(state.grammar, token, state.endTokens);
    }
    if (state.thinking != null) {
      state.thinking.accept(token);
    }
    state.accept(token);
  }

  /**
   * Keeps the request's KV blocks after it finishes (typically a prefill run with max_tokens 1) so
   * that another engine can copy them; {@link #heldBlocks} lists them, {@link #releaseHeld} or
   * {@link #abort} frees them.
   */
  @Override
  public void holdKvOnFinish(String requestId) {
    scheduler.retainOnFinish(requestId);
  }

  /** Block ids holding a finished, held request's KV in position order; null if none is held. */
  public int[] heldBlocks(String requestId) {
    Sequence seq = scheduler.retained(requestId);
    return seq == null ? null : Arrays.copyOf(seq.blocks(), seq.blockCount());
  }

  @Override
  public boolean releaseHeld(String requestId) {
    boolean released = scheduler.releaseRetained(requestId);
    retireAdapters();
    return released;
  }

  @Override
  public int layers() {
    return cache.layers();
  }

  @Override
  public String kvCacheDtype() {
    return cache.dtype().shortName();
  }

  @Override
  public long blockBytes() {
    return cache.blockBytes();
  }

  @Override
  public String keyRotation() {
    return keyRotation;
  }

  @Override
  public java.lang.foreign.MemorySegment keys(int layer) {
    return cache.keys(layer);
  }

  @Override
  public java.lang.foreign.MemorySegment values(int layer) {
    return cache.values(layer);
  }

  @Override
  public void relocateKv(java.util.function.LongFunction<java.lang.foreign.MemorySegment> allocate) {
    if (hasWork()) {
      throw new IllegalStateException("the KV cache moves only while no request is queued or running");
    }
    transformer.hostCacheMoving();
    cache.relocate(allocate, scheduler.pool().holdingData());
  }

  @Override
  public void setPromptLayerListener(PromptLayerListener listener) {
    this.promptLayerListener = listener;
  }

  /**
   * Warms the engine up and measures its prefill cost ({@link EngineWarmUp}); returns the measured
   * passes that took. Must run while no request is queued or running.
   */
  public int warmUp(int tokens, int rounds) {
    return EngineWarmUp.run(this, this::resetPrefillCost, tokens, rounds);
  }

  @Override
  public PendingImport beginImport(EngineRequest request) {
    checkRequest(request);
    constraints.start(request); // refuses a constraint it cannot compile before blocks are taken
    Scheduler.Imported imported = scheduler.addImported(request);
    if (imported == null) {
      return null;
    }
    Sequence seq = imported.sequence();
    pendingImports.put(request.requestId(), imported);
    return new PendingImport(request.requestId(), Arrays.copyOf(seq.blocks(), seq.blockCount()), imported.cachedBlocks());
  }

  @Override
  public void commitImport(PendingImport pending, int firstToken) {
    commit(pending, firstToken, false);
  }

  @Override
  public String weightQuantization() {
    return weights.matrixType().quantized() ? weights.matrixType().shortName() : "";
  }

  @Override
  public String computeDevice() {
    return backend instanceof CudaBackend cuda ? cuda.gpu().id() : "";
  }

  @Override
  public java.util.Optional<DeviceKv> deviceKv() {
    return transformer.deviceKv();
  }

  @Override
  public java.util.Optional<HostDeviceCopy> measureHostDeviceCopy(long bytes) {
    return transformer.measureHostDeviceCopy(bytes);
  }

  @Override
  public void commitDeviceImport(PendingImport pending, int firstToken) {
    if (transformer.deviceKv().isEmpty()) {
      throw new UnsupportedOperationException("this engine keeps no KV cache in GPU memory to import into");
    }
    commit(pending, firstToken, true);
  }

  /** Commits an import whose blocks are in the host cache, or ({@code onDevice}) in the GPU's copy. */
  private void commit(PendingImport pending, int firstToken, boolean onDevice) {
    Scheduler.Imported imported = pendingImports.remove(pending.requestId());
    if (imported == null) {
      throw new IllegalStateException("no import of " + pending.requestId() + " is pending (aborted?)");
    }
    EngineRequest request = imported.sequence().request();
    Sampler.State state = samplingState(request);
    accepted(state, firstToken);
    imported.sequence().setEngineState(state);
    if (onDevice) {
      transformer.deviceBlocksWritten(cache, pending.blocks(), pending.cachedBlocks());
    } else {
      transformer.hostBlocksWritten(cache, pending.blocks(), pending.cachedBlocks());
    }
    scheduler.commitImported(imported, firstToken);
  }

  @Override
  public void abortImport(PendingImport pending) {
    if (pendingImports.remove(pending.requestId()) != null) {
      scheduler.abort(pending.requestId());
      retireAdapters();
    }
  }

  @Override
  public boolean abort(String requestId) {
    pendingImports.remove(requestId);
    boolean found = super.abort(requestId);
    retireAdapters();
    return found;
  }

  /** Refuses a request this engine cannot run: an adapter it did not load, a token outside the vocabulary. */
  /** Before a request's {@code min_tokens}, neither its stop tokens nor (unless it ignores them) end-of-sequence may be drawn. */
  private void holdEnds(float[] logits, dev.tandem.common.StopConditions stop) {
    for (int t : stop.endTokens(info.eosTokenIds())) {
      if (t >= 0 && t < logits.length) {
        logits[t] = Float.NEGATIVE_INFINITY;
      }
    }
  }

  /**
   * What serves the model as a cross-encoder: {@code --hf-overrides}' two tokens, or a sequence
   * classifier's own score head; null for neither.
   */
  private static ClassifierConfig classifier(BuiltinConfig config, ModelWeights weights) {
    ClassifierConfig overrides = ClassifierConfig.parse(config.hfOverrides(), config.modelDir());
    float[][] head = weights.scoreHead();
    if (head != null) {
      if (overrides != null) {
        throw new IllegalArgumentException("--hf-overrides: this checkpoint is a sequence classifier with its own score head "
            + "(score.weight); leave classifier_from_token out");
      }
      return ClassifierConfig.ofScoreHead(head);
    }
    if (overrides != null && weights.headless()) {
      throw new IllegalArgumentException("--hf-overrides: classifier_from_token reads the LM head's logits, and this checkpoint has "
          + "none (no lm_head.weight, embeddings not tied in config.json)");
    }
    int vocab = weights.config().vocabSize();
    if (overrides != null && Math.max(overrides.falseToken(), overrides.trueToken()) >= vocab) {
      throw new IllegalArgumentException("--hf-overrides: classifier_from_token's id " + Math.max(overrides.falseToken(),
          overrides.trueToken()) + " is past this model's vocabulary (" + vocab + ")");
    }
    return overrides;
  }

  private void checkRequest(EngineRequest request) {
    if (poolingOnly && !request.embed()) {
      throw new IllegalArgumentException(weights.headless()
          ? "this model has no language-model head (no lm_head.weight, embeddings not tied): it serves embeddings only"
          : "this model is a sequence classifier (score.weight): it scores, it does not generate");
    }
    if (request.stop().minTokens() > 0 && request.structuredOutput() != null) {
      throw new IllegalArgumentException("min_tokens cannot be combined with a structured output: it ends when its value is complete");
    }
    if (request.loraName() != null && !adapters.containsKey(request.loraName())) {
      throw new IllegalArgumentException("LoRA adapter '" + request.loraName() + "' is not loaded on this worker ("
          + (adapters.isEmpty() ? "it loaded none" : "it has " + String.join(", ", adapters.keySet())) + ")");
    }
    for (int t : request.promptTokens()) {
      if (t < 0 || t >= weights.config().vocabSize()) {
        throw new IllegalArgumentException(
            "prompt token id " + t + " is outside the model's vocabulary (0.." + (weights.config().vocabSize() - 1) + ")");
      }
    }
  }

  /** Fills this engine's KV blocks with a prompt's keys and values computed elsewhere. */
  @FunctionalInterface
  public interface KvSource {
    /**
     * Copies block {@code index} (in position order) of one layer into the given destinations
     * ({@link PagedKvCache#blockBytes()} bytes each).
     */
    void copy(int layer, int index, java.lang.foreign.MemorySegment keys, java.lang.foreign.MemorySegment values);
  }

  /**
   * Continues a request whose prompt was prefilled elsewhere, copying synchronously: {@link
   * #beginImport}, every non-cached block of every layer from {@code source}, {@link #commitImport}.
   *
   * @return the number of leading prompt blocks reused from this engine's cache (not copied)
   * @throws IllegalStateException if the KV pool or batch has no room now
   */
  public int addPrefilled(EngineRequest request, int firstToken, KvSource source) {
    PendingImport pending = beginImport(request);
    if (pending == null) {
      throw new IllegalStateException("no room for request " + request.requestId() + " now (KV blocks or max_num_seqs)");
    }
    int[] blocks = pending.blocks();
    for (int layer = 0; layer < cache.layers(); layer++) {
      for (int i = pending.cachedBlocks(); i < blocks.length; i++) {
        source.copy(layer, i, cache.keyBlock(layer, blocks[i]), cache.valueBlock(layer, blocks[i]));
      }
    }
    commitImport(pending, firstToken);
    return pending.cachedBlocks();
  }

  @Override
  protected List<RequestOutput> run(ScheduledBatch batch) {
    List<Transformer.Slice> slices = new ArrayList<>(batch.size());
    List<String> promptsDone = new ArrayList<>();
    List<int[]> promptsDoneBlocks = new ArrayList<>();
    boolean wantPromptLogits = false;
    float[][][] draftRows = null; // [entry][row]: the logits after each token an entry verifies
    for (int i = 0; i < batch.size(); i++) {
      Sequence seq = batch.sequence(i);
      if (seq.drafts() > 0) {
        // Every position's logits, the last one's too, through the LM head in one pass.
        draftRows = draftRows == null ? new float[batch.size()][][] : draftRows;
        draftRows[i] = new float[batch.tokens()[i]][];
        wantPromptLogits = true;
        slices.add(new Transformer.Slice(seq.tokens(), seq.computedTokens(), batch.tokens()[i], seq.computedTokens(),
            Arrays.copyOf(seq.blocks(), seq.blockCount()), false, seq.computedTokens() + batch.tokens()[i] + 1, adapter(seq)));
        continue;
      }
      if (seq.computedTokens() < seq.promptLength()) {
        if (promptLayerListener != null && seq.computedTokens() + batch.tokens()[i] >= seq.promptLength()) {
          promptsDone.add(seq.id());
          promptsDoneBlocks.add(Arrays.copyOf(seq.blocks(), seq.blockCount()));
        }
      }
      Sampler.State st = seq.engineState();
      boolean promptLogits = st != null && st.promptLogprobs != null && seq.computedTokens() < seq.promptLength();
      wantPromptLogits |= promptLogits;
      slices.add(
          new Transformer.Slice(
              seq.tokens(),
              seq.computedTokens(),
              batch.tokens()[i],
              seq.computedTokens(),
              Arrays.copyOf(seq.blocks(), seq.blockCount()),
              batch.drawsToken(i),
              promptLogits ? seq.promptLength() : 0,
              adapter(seq)));
    }
    PromptLayerListener listener = promptLayerListener;
    float[][][] rows = draftRows;
    float[][] logits =
        transformer.forward(
            slices,
            cache,
            promptsDone.isEmpty() ? null : layer -> listener.layerDone(layer, promptsDone, promptsDoneBlocks),
            wantPromptLogits ? (slice, position, row) -> {
              Sequence seq = batch.sequence(slice);
              if (rows != null && rows[slice] != null) {
                rows[slice][position - seq.computedTokens()] = row;
                return;
              }
              Sampler.State st = seq.engineState();
              int next = seq.tokens()[position + 1];
              st.promptLogprobs[position] = Sampler.logprobs(row, next, seq.request().sampling().promptLogprobs());
            } : null);
    List<RequestOutput> outputs = scheduler.complete(batch, (i, row, draft, seq) -> {
      Sampler.State state = seq.engineState();
      float[] l = rows != null && rows[i] != null ? rows[i][row] : logits[i];
      int top = seq.request().sampling().logprobs();
      float[] raw = top >= 0 ? l.clone() : null; // sampling adjusts logits in place
      if (seq.request().embed() && seq.generated() == 0) {
        // The final norm's output only where it is read: a two-token classifier needs the logits alone.
        float[] hidden = classifier == null || classifier.readsHiddenState() ? transformer.finalHidden(i) : null;
        seq.setEmbedding(classifier != null ? classifier.logits(l, hidden) : hidden);
      }
      if (!seq.request().stop().mayStopAfter(seq.generated())) {
        holdEnds(l, seq.request().stop());
      }
      for (int banned : seq.badWordEnds()) {
        if (banned >= 0 && banned < l.length) {
          l[banned] = Float.NEGATIVE_INFINITY;
        }
      }
      int token;
      int forced = state.thinking == null ? -1 : state.thinking.forced();
      if (state.grammar == null) {
        token = forced >= 0 ? forced : sampler.sample(l, seq.request().sampling(), state, draft);
      } else {
        int left = Math.min(seq.request().outputBudget() - seq.generated(), scheduler.maxContextLength() - seq.length());
        if (!constraints.apply(state.grammar, left, state.endTokens, l)) {
          token = state.endTokens[0]; // nothing can follow: end the output
        } else if (forced >= 0 && l[forced] != Float.NEGATIVE_INFINITY) {
          token = forced; // the reasoning's budget is spent (and its grammar lets it close here)
        } else {
          token = sampler.sample(l, seq.request().sampling(), state, draft);
        }
      }
      accepted(state, token);
      if (raw != null) {
        seq.setDrawnLogprob(Sampler.logprobs(raw, token, top));
      }
      if (state.promptLogprobs != null && !state.promptLogprobsSent) {
        seq.setPromptLogprobs(state.promptLogprobs);
        state.promptLogprobsSent = true;
      }
      return token;
    });
    retireAdapters();
    return outputs;
  }

  /**
   * How many leading tokens of a proposal for {@code seq} its output's grammar allows (all of them
   * when it has none): verifying a token the mask will refuse would only cost its pass.
   */
  private int usableDrafts(Sequence seq, int[] proposal, int count) {
    if (!(seq.engineState() instanceof Sampler.State state) || state.grammar == null) {
      return count;
    }
    return constraints.allowedPrefix(state.grammar, proposal, count, state.endTokens);
  }

  /** The adapter a sequence runs with (checked when it was added; unloaded since, it finishes with it), or null for the base model. */
  private LoraAdapter adapter(Sequence seq) {
    String name = seq.request().loraName();
    if (name == null) {
      return null;
    }
    LoraAdapter adapter = adapters.get(name);
    return adapter != null ? adapter : retiring.get(name);
  }

  @Override
  public void close() {
    transformer.close();
    backend.close();
    cache.close();
    weights.close();
  }
}
