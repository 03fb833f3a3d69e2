package dev.tandem.engine.builtin;

import dev.tandem.common.KvEvent;
import dev.tandem.engine.Engine;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvEventSink;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ComputeBackends;
import dev.tandem.engine.kv.BlockPool;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelFormatException;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.engine.sched.ScheduledBatch;
import dev.tandem.engine.sched.Scheduler;
import dev.tandem.engine.sched.SchedulerConfig;
import dev.tandem.engine.sched.SchedulingEngine;
import dev.tandem.engine.sched.Sequence;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;

/**
 * The built-in engine: a real transformer on a compute backend, with a paged KV cache, prefix reuse
 * across requests, continuous batching with chunked prefill, and vLLM's sampling parameters.
 *
 * <p>Ownership: owns the mapped weights, the KV cache memory and the compute backend; {@link
 * #close()} releases all three. Threading: owned by one thread (see {@link Engine}).
 */
public final class BuiltinEngine extends SchedulingEngine {
  private final ModelWeights weights;
  private final ComputeBackend backend;
  private final PagedKvCache cache;
  private final Transformer transformer;
  private final Sampler sampler = new Sampler();
  private final EngineInfo info;

  /**
   * Loads the model and allocates the KV cache.
   *
   * @throws ModelFormatException naming the file and field when the model cannot be loaded
   */
  public static BuiltinEngine open(BuiltinConfig config) {
    ModelConfig model = ModelConfig.read(config.modelDir());
    ModelWeights weights = ModelWeights.load(config.modelDir(), model);
    try {
      ComputeBackend backend = ComputeBackends.create(config.compute(), config.threads());
      return new BuiltinEngine(weights, backend, config);
    } catch (RuntimeException e) {
      weights.close();
      throw e;
    }
  }

  public BuiltinEngine(ModelWeights weights, ComputeBackend backend, BuiltinConfig config) {
    ModelConfig model = weights.config();
    long blockBytes = 2L * model.numLayers() * config.blockSize() * model.kvDim() * Float.BYTES;
    int blocks = (int) Math.min(Integer.MAX_VALUE, config.kvCacheBytes() / blockBytes);
    if (blocks < 1) {
      throw new IllegalArgumentException(
          "KV cache of " + config.kvCacheBytes() + " bytes holds no block; one block of "
              + config.blockSize() + " tokens needs " + blockBytes + " bytes");
    }
    int context =
        config.maxContextLength() > 0 ? config.maxContextLength() : model.maxPositionEmbeddings();
    super(
        new Scheduler(
            new SchedulerConfig(
                config.maxNumSeqs(), config.maxBatchedTokens(), config.chunkedPrefill(), context, model.eosTokenIds()),
            new BlockPool(blocks, config.blockSize())));
    this.weights = weights;
    this.backend = backend;
    this.cache = new PagedKvCache(model, blocks, config.blockSize());
    this.transformer = new Transformer(weights, backend, config.blockSize());
    String name =
        config.modelName() != null ? config.modelName() : config.modelDir().getFileName().toString();
    this.info =
        new EngineInfo(
            "builtin-" + backend.name(),
            name,
            config.blockSize(),
            blocks,
            model.vocabSize(),
            scheduler.maxContextLength(),
            model.kvBytesPerToken(),
            EnumSet.of(
                EngineInfo.Feature.TEMPERATURE,
                EngineInfo.Feature.TOP_P,
                EngineInfo.Feature.TOP_K,
                EngineInfo.Feature.MIN_P,
                EngineInfo.Feature.SEED,
                EngineInfo.Feature.PRESENCE_PENALTY,
                EngineInfo.Feature.FREQUENCY_PENALTY,
                EngineInfo.Feature.REPETITION_PENALTY,
                EngineInfo.Feature.LOGPROBS,
                EngineInfo.Feature.STOP_TOKEN_IDS),
            model.eosTokenIds());
  }

  @Override
  public EngineInfo info() {
    return info;
  }

  public ModelConfig modelConfig() {
    return weights.config();
  }

  /** Bytes of weights one decode step reads (every matrix once). */
  public long bytesReadPerToken() {
    return weights.bytesReadPerToken();
  }

  /** Bytes per element of the weight matrices (as stored). */
  public int weightElementBytes() {
    return weights.layer(0).q().dtype().bytes();
  }

  /** The KV cache's memory, for export and import of blocks. */
  public PagedKvCache kvCache() {
    return cache;
  }

  @Override
  public void add(EngineRequest request) {
    for (int t : request.promptTokens()) {
      if (t < 0 || t >= weights.config().vocabSize()) {
        throw new IllegalArgumentException(
            "prompt token id " + t + " is outside the model's vocabulary (0.." + (weights.config().vocabSize() - 1) + ")");
      }
    }
    Sequence seq = scheduler.add(request);
    seq.setEngineState(new Sampler.State(request.sampling(), request.promptTokens()));
  }

  /**
   * Keeps the request's KV blocks after it finishes (typically a prefill run with max_tokens 1) so
   * that another engine can copy them; {@link #heldBlocks} lists them, {@link #releaseHeld} or
   * {@link #abort} frees them.
   */
  public void holdKvOnFinish(String requestId) {
    scheduler.retainOnFinish(requestId);
  }

  /** Block ids holding a finished, held request's KV in position order; null if none is held. */
  public int[] heldBlocks(String requestId) {
    Sequence seq = scheduler.retained(requestId);
    return seq == null ? null : Arrays.copyOf(seq.blocks(), seq.blockCount());
  }

  public boolean releaseHeld(String requestId) {
    return scheduler.releaseRetained(requestId);
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
   * Continues a request whose prompt was prefilled elsewhere: blocks are allocated here, prompt
   * blocks this engine already caches are reused, the rest are filled from {@code source} layer by
   * layer, and the request decodes from {@code firstToken} on (which it does not emit again).
   *
   * @return the number of leading prompt blocks reused from this engine's cache (not copied)
   * @throws IllegalStateException if the KV pool or batch has no room now
   */
  public int addPrefilled(EngineRequest request, int firstToken, KvSource source) {
    Scheduler.Imported imported = scheduler.addImported(request, firstToken);
    if (imported == null) {
      throw new IllegalStateException("no room for request " + request.requestId() + " now (KV blocks or max_num_seqs)");
    }
    Sequence seq = imported.sequence();
    Sampler.State state = new Sampler.State(request.sampling(), request.promptTokens());
    state.accept(firstToken);
    seq.setEngineState(state);
    int[] blocks = seq.blocks();
    for (int layer = 0; layer < cache.layers(); layer++) {
      for (int i = imported.cachedBlocks(); i < seq.blockCount(); i++) {
        source.copy(layer, i, cache.keyBlock(layer, blocks[i]), cache.valueBlock(layer, blocks[i]));
      }
    }
    scheduler.commitImported(imported);
    return imported.cachedBlocks();
  }

  @Override
  protected List<RequestOutput> run(ScheduledBatch batch) {
    List<Transformer.Slice> slices = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      Sequence seq = batch.sequence(i);
      slices.add(
          new Transformer.Slice(
              seq.tokens(),
              seq.computedTokens(),
              batch.tokens()[i],
              seq.computedTokens(),
              Arrays.copyOf(seq.blocks(), seq.blockCount()),
              batch.drawsToken(i)));
    }
    float[][] logits = transformer.forward(slices, cache);
    return scheduler.complete(batch, (i, seq) -> {
      Sampler.State state = seq.engineState();
      int top = seq.request().sampling().logprobs();
      float[] raw = top >= 0 ? logits[i].clone() : null; // sampling adjusts logits in place
      int token = sampler.sample(logits[i], seq.request().sampling(), state);
      state.accept(token);
      if (raw != null) {
        seq.setDrawnLogprob(Sampler.logprobs(raw, token, top));
      }
      return token;
    });
  }

  @Override
  public void close() {
    backend.close();
    cache.close();
    weights.close();
  }
}
