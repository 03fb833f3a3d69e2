package dev.tandem.engine.encoder;

import dev.tandem.common.FinishReason;
import dev.tandem.common.KvEvent;
import dev.tandem.engine.Engine;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvEventSink;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ComputeBackends;
import dev.tandem.engine.model.ModelFormatException;
import dev.tandem.engine.model.PoolingConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.PriorityQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves a bidirectional encoder's embeddings (BERT, RoBERTa, XLM-RoBERTa; {@link EncoderConfig}):
 * each request runs its whole input through the model in one step — every token attends to every
 * other, so nothing of a prefix can be reused and there is no KV cache — and its one output carries
 * the pooled vector ({@link PoolingConfig.Mode}: the model's sentence-transformers Pooling module,
 * else the {@code [CLS]} token's, as vLLM pools BERT). Requests that generate are refused: the
 * model has no language-model head.
 *
 * <p>A step runs queued requests, first come first served (or by priority where told), up to
 * {@code maxNumSeqs} of them and {@code maxBatchedTokens} tokens (always at least one), as one
 * batch: their rows go through each of {@link EncoderModel}'s matrices together, each attending
 * within its own input.
 *
 * <p>Threading: owned by one thread (see {@link Engine}).
 */
public final class EncoderEngine implements Engine {
  private static final Logger LOG = LoggerFactory.getLogger(EncoderEngine.class);
  /** The block size the engine reports: it keeps no KV, but routers and workers count in blocks. */
  private static final int BLOCK = 16;

  private final EncoderModel model;
  private final PoolingConfig.Mode pooling;
  private final EngineInfo info;
  private final int maxNumSeqs;
  private final int maxBatchedTokens;
  private final PriorityQueue<Queued> queue;
  private boolean byPriority;
  private long arrivals;

  private record Queued(EngineRequest request, int priority, long arrival) {}

  private EncoderEngine(EncoderModel model, PoolingConfig pooling, String modelName, int maxNumSeqs, int maxBatchedTokens) {
    this.model = model;
    this.pooling = pooling.mode();
    this.maxNumSeqs = maxNumSeqs;
    this.maxBatchedTokens = maxBatchedTokens;
    this.queue = new PriorityQueue<>(Comparator.comparingInt(Queued::priority).thenComparingLong(Queued::arrival));
    EnumSet<EngineInfo.Feature> features = EnumSet.of(EngineInfo.Feature.EMBEDDINGS, EngineInfo.Feature.POOLING_ONLY,
        EngineInfo.Feature.ENCODER);
    if (pooling.matryoshka()) {
      features.add(EngineInfo.Feature.MATRYOSHKA);
    }
    EncoderConfig c = model.config();
    this.info = new EngineInfo("builtin", modelName, BLOCK, 0, c.vocabSize(), c.maxTokens(), 0, "", features, new int[0],
        new EngineInfo.Batching(maxNumSeqs, maxBatchedTokens));
  }

  /**
   * Loads the encoder in {@code dir} on the compute backend {@code compute} ("cpu", "scalar", or
   * "auto", which is "cpu" here; not "cuda": the encoder's attention runs on the CPU).
   *
   * @throws ModelFormatException naming the file and field when the model cannot be served
   */
  public static EncoderEngine open(Path dir, String modelName, String compute, int threads, int maxNumSeqs, int maxBatchedTokens) {
    if (compute.equals("cuda")) {
      throw new IllegalArgumentException("--compute cuda: an encoder (" + dir + ") runs on the CPU backends only");
    }
    EncoderConfig config = EncoderConfig.read(dir);
    PoolingConfig pooling = PoolingConfig.read(dir, PoolingConfig.Mode.CLS);
    if (pooling.otherModule() != null) {
      throw new ModelFormatException(pooling.otherModule() + " changes the pooled vector, which Tandem does not apply");
    }
    if (pooling.mode() == null) {
      throw new ModelFormatException(pooling.source() + ": supported: one of "
          + java.util.Arrays.stream(PoolingConfig.Mode.values()).map(m -> m.field).toList());
    }
    ComputeBackend backend = ComputeBackends.create(compute.equals("auto") ? "cpu" : compute, threads);
    try {
      EncoderModel model = EncoderModel.load(dir, config, backend);
      LOG.info("encoder {} ({} layers, hidden {}): embeddings pooled by {}{}", dir, config.layers(), config.hidden(), pooling.mode(),
          pooling.source() == null ? " (the default: no sentence-transformers Pooling module)" : " (" + pooling.source() + ")");
      return new EncoderEngine(model, pooling, modelName == null ? dir.getFileName().toString() : modelName, maxNumSeqs, maxBatchedTokens);
    } catch (RuntimeException e) {
      backend.close();
      throw e;
    }
  }

  /** Runs queued requests by their priority (lower first), then arrival, from now on; call before serving. */
  public void scheduleByPriority() {
    byPriority = true;
  }

  @Override
  public EngineInfo info() {
    return byPriority ? info.withFeature(EngineInfo.Feature.PRIORITY) : info;
  }

  @Override
  public void setEventSink(KvEventSink sink) {
    // No KV is cached: there are no events.
  }

  @Override
  public void add(EngineRequest request) {
    if (!request.embed()) {
      throw new IllegalArgumentException("this model is an encoder (" + model.config().modelType()
          + "): it serves embeddings, /score and /rerank only");
    }
    if (request.loraName() != null) {
      throw new IllegalArgumentException("LoRA adapter '" + request.loraName() + "': an encoder applies no adapters");
    }
    int n = request.promptTokens().length;
    if (n == 0 || n > model.config().maxTokens()) {
      throw new IllegalArgumentException("the input has " + n + " tokens; this encoder takes 1 to " + model.config().maxTokens());
    }
    for (int t : request.promptTokens()) {
      if (t < 0 || t >= model.config().vocabSize()) {
        throw new IllegalArgumentException("token id " + t + " is outside the vocabulary (" + model.config().vocabSize() + ")");
      }
    }
    queue.add(new Queued(request, byPriority ? request.priority() : 0, arrivals++));
  }

  @Override
  public boolean abort(String requestId) {
    return queue.removeIf(q -> q.request().requestId().equals(requestId));
  }

  @Override
  public boolean hasWork() {
    return !queue.isEmpty();
  }

  @Override
  public List<RequestOutput> step() {
    List<EngineRequest> batch = new ArrayList<>();
    long tokens = 0;
    while (!queue.isEmpty() && batch.size() < maxNumSeqs) {
      int n = queue.peek().request().promptTokens().length;
      if (!batch.isEmpty() && tokens + n > maxBatchedTokens) {
        break;
      }
      batch.add(queue.poll().request());
      tokens += n;
    }
    if (batch.isEmpty()) {
      return List.of();
    }
    float[][] vectors = model.pooled(batch.stream().map(EngineRequest::promptTokens).toArray(int[][]::new), pooling);
    List<RequestOutput> out = new ArrayList<>(batch.size());
    for (int i = 0; i < vectors.length; i++) {
      EngineRequest r = batch.get(i);
      out.add(new RequestOutput(r.requestId(), new int[0], FinishReason.LENGTH, r.promptTokens().length, 0, null, null, vectors[i]));
    }
    return out;
  }

  @Override
  public EngineLoad load() {
    long queued = 0;
    for (Queued q : queue) {
      queued += q.request().promptTokens().length;
    }
    return new EngineLoad(0, queue.size(), queued, 0, 0, 0);
  }

  @Override
  public List<KvEvent> cacheSnapshot() {
    return List.of(new KvEvent.Cleared(0));
  }

  @Override
  public void close() {
    model.close();
  }
}
