package dev.tandem.engine.builtin;

import dev.tandem.engine.compute.AttentionBatch;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.WeightMatrix;
import dev.tandem.engine.model.LayerWeights;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.model.LoraAdapter.Target;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import java.util.List;

/**
 * The forward pass of a Llama / Mistral / Phi-3 / Qwen2 / Qwen3 / Gemma 3 decoder over a batch of
 * sequences, each running some tokens at some positions (a prefill chunk or one decode token). KV
 * of the new tokens are written into each sequence's blocks of the {@link PagedKvCache}; attention
 * reads everything before them from there, so a cached prefix is simply blocks already present.
 *
 * <p>Threading: owned by the engine thread; buffers are reused between calls.
 */
public final class Transformer implements ForwardPass {
  /**
   * One sequence's share of a forward pass: {@code count} tokens from {@code tokens[from..]}, at
   * positions {@code startPosition..}, KV in {@code blockTable}. Logits are computed for its last
   * token when {@code wantLogits}, and for every token at a position p with p + 1 < {@code
   * promptLogitsBefore} (a prompt's log-probabilities; 0: none). Its tokens run with LoRA adapter
   * {@code lora} (null: the base model).
   */
  public record Slice(
      int[] tokens, int from, int count, int startPosition, int[] blockTable, boolean wantLogits, int promptLogitsBefore,
      LoraAdapter lora) {
    /** A slice that wants no logits of its earlier tokens. */
    public Slice(int[] tokens, int from, int count, int startPosition, int[] blockTable, boolean wantLogits) {
      this(tokens, from, count, startPosition, blockTable, wantLogits, 0);
    }

    /** A slice of the base model. */
    public Slice(int[] tokens, int from, int count, int startPosition, int[] blockTable, boolean wantLogits, int promptLogitsBefore) {
      this(tokens, from, count, startPosition, blockTable, wantLogits, promptLogitsBefore, null);
    }

    /** How many of the slice's first positions {@code promptLogitsBefore} asks logits for (p + 1 < the bound). */
    public int positionLogits() {
      return Math.max(0, Math.min(count, promptLogitsBefore - 1 - startPosition));
    }
  }

  /** Receives the logits {@code (vocab)} after the token at {@code position} of slice {@code slice}. */
  @FunctionalInterface
  public interface PositionLogits {
    void accept(int slice, int position, float[] logits);
  }

  /** Tokens whose logits go through the LM head together when every position's are wanted. */
  private static final int PROMPT_LOGITS_CHUNK = 16;

  private final ModelConfig config;
  private final ModelWeights weights;
  private float[] finalHidden; // the last pass's final-norm rows of the slices that wanted logits
  private int[] finalHiddenRow; // per slice of the last pass: its row there, or -1
  private final ComputeBackend backend;
  private final RopeFrequencies.Rotation[] rotation; // per layer: sliding layers may have their own RoPE base
  private final float queryScale; // folds query_pre_attn_scalar into q where it is not head_dim (Gemma)
  private final int blockSize;

  // Activations, one row per token; grown on demand.
  private float[] x = new float[0]; // (tokens, hidden) residual stream
  private float[] xb = new float[0]; // (tokens, hidden) normalised input of a sub-layer
  private float[] xb2 = new float[0]; // (tokens, hidden) sub-layer output
  private float[] q = new float[0]; // (tokens, heads × headDim)
  private float[] k = new float[0]; // (tokens, kvHeads × headDim)
  private float[] v = new float[0]; // (tokens, kvHeads × headDim)
  private float[] att = new float[0]; // (tokens, heads × headDim)
  private float[] hb = new float[0]; // (tokens, intermediate) gate, then act(gate) · up
  private float[] hb2 = new float[0]; // (tokens, intermediate) up
  private List<LoraRows> loras; // this pass's rows by LoRA adapter; null when every slice runs the base model

  /** The rows of a pass that run with one LoRA adapter. */
  private record LoraRows(LoraAdapter adapter, int[] rows) {}

  /** A forward pass that serves up to the model's {@code max_position_embeddings}. */
  public Transformer(ModelWeights weights, ComputeBackend backend, int blockSize) {
    this(weights, backend, blockSize, weights.config().maxPositionEmbeddings());
  }

  /**
   * A forward pass for an engine serving {@code context} positions, which picks LongRoPE's short or
   * long factors ({@link ModelConfig.RopeScaling#factorsFor}).
   */
  public Transformer(ModelWeights weights, ComputeBackend backend, int blockSize, int context) {
    this.config = weights.config();
    this.weights = weights;
    this.backend = backend;
    backend.streamsWeightsPerStep(weights.bytesReadPerToken());
    this.rotation = new RopeFrequencies.Rotation[config.numLayers()];
    for (int l = 0; l < rotation.length; l++) {
      rotation[l] = RopeFrequencies.of(config, l, context);
    }
    // The backends scale scores by 1/√headDim; q·√(headDim/s) makes that 1/√s.
    this.queryScale = (float) Math.sqrt(config.headDim() / config.queryPreAttnScalar());
    this.blockSize = blockSize;
  }

  public ModelConfig config() {
    return config;
  }

  /**
   * Runs the slices through the model; returns logits {@code (vocab)} for each slice that wants
   * them, in slice order (null for the others).
   */
  @Override
  public float[][] forward(List<Slice> slices, PagedKvCache cache) {
    return forward(slices, cache, null);
  }

  /**
   * As {@link #forward(List, PagedKvCache)}, calling {@code layerKvWritten} (may be null) with each
   * layer's index as soon as that layer's keys and values for every slice are in the cache.
   */
  public float[][] forward(List<Slice> slices, PagedKvCache cache, java.util.function.IntConsumer layerKvWritten) {
    return forward(slices, cache, layerKvWritten, null);
  }

  /**
   * As above, handing {@code positionLogits} (may be null) the logits after each token that a
   * slice's {@code promptLogitsBefore} asks for.
   */
  @Override
  public float[][] forward(
      List<Slice> slices, PagedKvCache cache, java.util.function.IntConsumer layerKvWritten, PositionLogits positionLogits) {
    int tokens = 0;
    for (Slice s : slices) {
      tokens += s.count();
    }
    ensureCapacity(tokens);
    int hidden = config.hiddenSize();
    int[] positions = new int[tokens];
    int[][] tables = new int[tokens][];
    int[] tokenIds = new int[tokens];
    int t = 0;
    for (Slice s : slices) {
      for (int j = 0; j < s.count(); j++, t++) {
        positions[t] = s.startPosition() + j;
        tables[t] = s.blockTable();
        tokenIds[t] = s.tokens()[s.from() + j];
      }
    }

    loras = loraRows(slices);

    // Token embeddings (Gemma: times √hidden).
    for (t = 0; t < tokens; t++) {
      if (tokenIds[t] < 0 || tokenIds[t] >= config.vocabSize()) {
        throw new IllegalArgumentException(
            "token id " + tokenIds[t] + " is outside the vocabulary (" + config.vocabSize() + ")");
      }
      weights.embedding().row(tokenIds[t], x, t * hidden);
    }
    scale(x, tokens * hidden, config.embeddingScale());

    for (int l = 0; l < config.numLayers(); l++) {
      attentionBlock(l, weights.layer(l), tokens, positions, tables, cache);
      if (layerKvWritten != null) {
        layerKvWritten.accept(l);
      }
      mlpBlock(l, weights.layer(l), tokens);
    }
    if (positionLogits != null) {
      positionLogits(slices, positionLogits);
    }
    return logits(slices, tokens);
  }

  /** Final norm and LM head over every asked-for position, a few tokens at a time. */
  private void positionLogits(List<Slice> slices, PositionLogits out) {
    int hidden = config.hiddenSize();
    int vocab = config.vocabSize();
    int most = 0; // a speculative step verifies a few positions: buffers for those, not a whole chunk of the vocabulary
    for (Slice s : slices) {
      most = Math.max(most, s.positionLogits());
    }
    int chunk = Math.min(PROMPT_LOGITS_CHUNK, most);
    float[] rows = new float[chunk * hidden];
    float[] logits = new float[chunk * vocab];
    int first = 0; // row of the slice's first token in x
    for (int i = 0; i < slices.size(); i++) {
      Slice s = slices.get(i);
      int wanted = s.positionLogits();
      for (int j = 0; j < wanted; j += PROMPT_LOGITS_CHUNK) {
        int n = Math.min(PROMPT_LOGITS_CHUNK, wanted - j);
        System.arraycopy(x, (first + j) * hidden, rows, 0, n * hidden);
        backend.rmsNorm(rows, rows, weights.finalNorm(), config.rmsNormEps(), n, hidden);
        backend.matmul(rows, n, weights.lmHead(), logits);
        softcap(logits, n * vocab);
        for (int r = 0; r < n; r++) {
          out.accept(i, s.startPosition() + j + r, java.util.Arrays.copyOfRange(logits, r * vocab, (r + 1) * vocab));
        }
      }
      first += s.count();
    }
  }

  private void attentionBlock(
      int l, LayerWeights w, int tokens, int[] positions, int[][] tables, PagedKvCache cache) {
    int hidden = config.hiddenSize();
    int kvDim = config.kvDim();
    // Pre-norm, then q, k, v projections (+ bias for Qwen2).
    backend.rmsNorm(x, xb, w.inputNorm(), config.rmsNormEps(), tokens, hidden);
    backend.matmul(xb, tokens, new WeightMatrix[] {w.q(), w.k(), w.v()}, new float[][] {q, k, v});
    lora(l, Target.Q, xb, hidden, q, config.qDim());
    lora(l, Target.K, xb, hidden, k, kvDim);
    lora(l, Target.V, xb, hidden, v, kvDim);
    addBias(q, w.qBias(), tokens);
    addBias(k, w.kBias(), tokens);
    addBias(v, w.vBias(), tokens);
    // Qwen3, Gemma 3: RMSNorm of each query and key head.
    if (w.qNorm() != null) {
      backend.rmsNorm(q, q, w.qNorm(), config.rmsNormEps(), tokens * config.numHeads(), config.headDim());
      backend.rmsNorm(k, k, w.kNorm(), config.rmsNormEps(), tokens * config.numKvHeads(), config.headDim());
    }
    // Rotary positions, then the score scale beyond 1/√headDim (Gemma's query_pre_attn_scalar).
    RopeFrequencies.Rotation r = rotation[l];
    backend.rope(q, tokens, config.numHeads(), config.headDim(), positions, r.invFreq(), r.scale());
    backend.rope(k, tokens, config.numKvHeads(), config.headDim(), positions, r.invFreq(), r.scale());
    scale(q, tokens * config.qDim(), queryScale);
    // New keys and values into the paged cache, then attention over each sequence's cache.
    for (int t = 0; t < tokens; t++) {
      int p = positions[t];
      cache.write(l, tables[t][p / blockSize], p % blockSize, k, v, t * kvDim);
    }
    backend.attention(
        new AttentionBatch(
            q, att, tokens, positions, tables, cache.keys(l), cache.values(l), blockSize,
            config.numHeads(), config.numKvHeads(), config.headDim(), cache.dtype(), config.windowOf(l), (float) config.attnLogitSoftcap()));
    // Output projection (Gemma: and its norm), residual.
    backend.matmul(att, tokens, w.o(), xb2);
    lora(l, Target.O, att, config.qDim(), xb2, hidden);
    addBias(xb2, w.oBias(), tokens);
    if (w.attentionOutNorm() != null) {
      backend.rmsNorm(xb2, xb2, w.attentionOutNorm(), config.rmsNormEps(), tokens, hidden);
    }
    addInPlace(x, xb2, tokens * hidden);
  }

  private void mlpBlock(int l, LayerWeights w, int tokens) {
    int hidden = config.hiddenSize();
    int intermediate = config.intermediateSize();
    // Pre-norm, SwiGLU or GeGLU: down(act(gate(x)) · up(x)) (Gemma: and its norm), residual.
    backend.rmsNorm(x, xb, w.mlpNorm(), config.rmsNormEps(), tokens, hidden);
    backend.matmul(xb, tokens, new WeightMatrix[] {w.gate(), w.up()}, new float[][] {hb, hb2});
    lora(l, Target.GATE, xb, hidden, hb, intermediate);
    lora(l, Target.UP, xb, hidden, hb2, intermediate);
    switch (config.activation()) {
      case SILU -> backend.siluMul(hb, hb2, tokens * intermediate);
      case GELU_TANH -> backend.geluTanhMul(hb, hb2, tokens * intermediate);
    }
    backend.matmul(hb, tokens, w.down(), xb2);
    lora(l, Target.DOWN, hb, intermediate, xb2, hidden);
    if (w.mlpOutNorm() != null) {
      backend.rmsNorm(xb2, xb2, w.mlpOutNorm(), config.rmsNormEps(), tokens, hidden);
    }
    addInPlace(x, xb2, tokens * hidden);
  }

  /** Each LoRA adapter's rows in this pass, or null when no slice runs one. */
  private static List<LoraRows> loraRows(List<Slice> slices) {
    java.util.Map<LoraAdapter, int[]> rows = null;
    int first = 0;
    for (Slice s : slices) {
      if (s.lora() != null) {
        rows = rows == null ? new java.util.LinkedHashMap<>() : rows;
        int[] had = rows.getOrDefault(s.lora(), new int[0]);
        int[] more = java.util.Arrays.copyOf(had, had.length + s.count());
        for (int j = 0; j < s.count(); j++) {
          more[had.length + j] = first + j;
        }
        rows.put(s.lora(), more);
      }
      first += s.count();
    }
    return rows == null ? null : rows.entrySet().stream().map(e -> new LoraRows(e.getKey(), e.getValue())).toList();
  }

  /**
   * Adds each LoRA adapter's change to projection {@code target} of layer {@code layer} to the
   * rows of {@code out} (width {@code outDim}) that run with it: {@code B·(A·x)} of their rows of
   * {@code in} (width {@code inDim}), on the backend.
   */
  private void lora(int layer, Target target, float[] in, int inDim, float[] out, int outDim) {
    if (loras == null) {
      return;
    }
    for (LoraRows group : loras) {
      LoraAdapter.Delta delta = group.adapter().delta(layer, target);
      if (delta != null) {
        backend.addLowRank(in, inDim, group.rows(), delta.values(), delta.aAt(), delta.bAt(), delta.rank(), out, outDim);
      }
    }
  }

  @Override
  public float[] finalHidden(int slice) {
    if (finalHiddenRow == null || slice >= finalHiddenRow.length || finalHiddenRow[slice] < 0) {
      throw new IllegalStateException("slice " + slice + " of the last pass wanted no logits");
    }
    int hidden = config.hiddenSize();
    return java.util.Arrays.copyOfRange(finalHidden, finalHiddenRow[slice] * hidden, (finalHiddenRow[slice] + 1) * hidden);
  }

  /** Final norm and LM head, only for the last token of slices that want logits. */
  private float[][] logits(List<Slice> slices, int tokens) {
    int hidden = config.hiddenSize();
    int wanted = 0;
    for (Slice s : slices) {
      wanted += s.wantLogits() ? 1 : 0;
    }
    float[][] result = new float[slices.size()][];
    finalHiddenRow = null;
    if (wanted == 0) {
      return result;
    }
    float[] last = new float[wanted * hidden];
    int row = 0;
    int end = 0;
    for (Slice s : slices) {
      end += s.count();
      if (s.wantLogits()) {
        System.arraycopy(x, (end - 1) * hidden, last, row++ * hidden, hidden);
      }
    }
    backend.rmsNorm(last, last, weights.finalNorm(), config.rmsNormEps(), wanted, hidden);
    finalHidden = last;
    finalHiddenRow = new int[slices.size()];
    float[] all = new float[wanted * config.vocabSize()];
    backend.matmul(last, wanted, weights.lmHead(), all);
    softcap(all, all.length);
    row = 0;
    for (int i = 0; i < slices.size(); i++) {
      finalHiddenRow[i] = slices.get(i).wantLogits() ? row : -1;
      if (slices.get(i).wantLogits()) {
        result[i] = java.util.Arrays.copyOfRange(all, row * config.vocabSize(), (row + 1) * config.vocabSize());
        row++;
      }
    }
    return result;
  }

  private static void addBias(float[] a, float[] bias, int rows) {
    if (bias == null) {
      return;
    }
    int n = bias.length;
    for (int t = 0; t < rows; t++) {
      for (int i = 0; i < n; i++) {
        a[t * n + i] += bias[i];
      }
    }
  }

  private static void scale(float[] a, int n, float factor) {
    if (factor == 1f) {
      return;
    }
    for (int i = 0; i < n; i++) {
      a[i] *= factor;
    }
  }

  /** {@code final_logit_softcapping}: each logit to c·tanh(logit/c), where the model names a c. */
  private void softcap(float[] logits, int n) {
    double c = config.finalLogitSoftcap();
    if (c == 0) {
      return;
    }
    for (int i = 0; i < n; i++) {
      logits[i] = (float) (c * Math.tanh(logits[i] / c));
    }
  }

  private static void addInPlace(float[] a, float[] b, int n) {
    for (int i = 0; i < n; i++) {
      a[i] += b[i];
    }
  }

  private void ensureCapacity(int tokens) {
    int hidden = config.hiddenSize();
    if (x.length >= tokens * hidden) {
      return;
    }
    int n = Math.max(tokens, x.length / Math.max(1, hidden) * 2);
    x = new float[n * hidden];
    xb = new float[n * hidden];
    xb2 = new float[n * hidden];
    q = new float[n * config.qDim()];
    att = new float[n * config.qDim()];
    k = new float[n * config.kvDim()];
    v = new float[n * config.kvDim()];
    hb = new float[n * config.intermediateSize()];
    hb2 = new float[n * config.intermediateSize()];
  }
}
