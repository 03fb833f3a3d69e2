package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.List;
import java.util.Map;

/**
 * The transformer's shape, read from a Hugging Face {@code config.json}: LlamaForCausalLM,
 * MistralForCausalLM, Phi3ForCausalLM (Llama's with fused qkv and gate/up projections: Phi-3,
 * Phi-4), Qwen2ForCausalLM, Qwen3ForCausalLM (grouped-query attention, RoPE with
 * optional Llama-3 or linear scaling, RMSNorm, SwiGLU, Qwen2's qkv bias, Qwen3's per-head q/k
 * RMSNorm, tied embeddings), Gemma2ForCausalLM (Gemma 2: see {@link Architecture#GEMMA2}) and
 * Gemma3ForCausalLM (Gemma 3's text model, also read from the {@code text_config} of a
 * Gemma3ForConditionalGeneration: see {@link Architecture#GEMMA3}); the {@code
 * *ForSequenceClassification} of any of them as its causal twin (its score head is {@link
 * ModelWeights#scoreHead}).
 *
 * @param rotaryDim the leading dimensions of each head that RoPE rotates: {@code head_dim} ×
 *     {@code partial_rotary_factor} (Phi-4-mini: 96 of 128); the rest pass through unrotated
 * @param maxPositionEmbeddings config.json's {@code max_position_embeddings}
 * @param activation the MLP's gate activation ({@code hidden_act}, Gemma's {@code hidden_activation})
 * @param slidingWindow {@code sliding_window}: in a sliding layer each token attends to at most this
 *     many positions (itself included); 0 for none (Mistral v0.2 on; Qwen2 and Qwen3 unless {@code
 *     use_sliding_window})
 * @param slidingLayers which layers slide (Mistral: all; Qwen2 and Qwen3: from {@code
 *     max_window_layers} on; Gemma 2: every other one from the first; Gemma 3: all but every {@code
 *     sliding_window_pattern}-th; or as {@code
 *     layer_types} lists them); the others attend to every earlier position. Empty without a window
 * @param localRopeTheta RoPE's base in the sliding layers, unscaled (Gemma 3's {@code
 *     rope_local_base_freq}); 0: those layers rotate as the others do
 * @param queryPreAttnScalar attention scores are scaled by its inverse square root (Gemma's {@code
 *     query_pre_attn_scalar}; the others: {@code head_dim})
 * @param attnLogitSoftcap attention scores become {@code c·tanh(score/c)} before the softmax (Gemma
 *     2's {@code attn_logit_softcapping}, 50 unless set; Gemma 3's where a config sets one); 0: none
 * @param finalLogitSoftcap logits become {@code c·tanh(logit/c)} ({@code final_logit_softcapping}); 0:
 *     none
 * @param qkvBias q, k and v projections carry a bias (Qwen2 always; Llama and Qwen3 with
 *     attention_bias)
 * @param outputBias the output projection carries a bias (Llama and Qwen3 with attention_bias)
 * @param qkNorm per-head RMSNorm of queries and keys before RoPE (Qwen3, Gemma 3; not Gemma 2)
 */
public record ModelConfig(
    Architecture architecture,
    int hiddenSize,
    int intermediateSize,
    int numLayers,
    int numHeads,
    int numKvHeads,
    int headDim,
    int vocabSize,
    float rmsNormEps,
    double ropeTheta,
    RopeScaling ropeScaling,
    int rotaryDim,
    int maxPositionEmbeddings,
    Activation activation,
    int slidingWindow,
    BitSet slidingLayers,
    double localRopeTheta,
    double queryPreAttnScalar,
    double attnLogitSoftcap,
    double finalLogitSoftcap,
    boolean tieWordEmbeddings,
    boolean qkvBias,
    boolean outputBias,
    boolean qkNorm,
    int[] eosTokenIds,
    DType torchDtype) {

  /** The architectures the built-in engine runs. */
  public enum Architecture {
    LLAMA("LlamaForCausalLM", "llama"),
    MISTRAL("MistralForCausalLM", "mistral"),
    /** Llama's computation; q, k and v in one matrix ({@code qkv_proj}), gate and up in another ({@code gate_up_proj}). */
    PHI3("Phi3ForCausalLM", "phi3"),
    QWEN2("Qwen2ForCausalLM", "qwen2"),
    QWEN3("Qwen3ForCausalLM", "qwen3"),
    /**
     * Gemma 2: Gemma 3's layer (scaled embeddings, offset norms, a norm after attention and after
     * the MLP, GeGLU) without the q/k norm, attention scores capped by {@code c·tanh(s/c)}, every
     * other layer sliding from the first, one RoPE base for all, the logits capped too.
     */
    GEMMA2("Gemma2ForCausalLM", "gemma2"),
    /**
     * Gemma 3's text model: embeddings scaled by √hidden, RMSNorm weights as offsets from 1, a norm
     * after attention and after the MLP as well as before each, GeGLU (tanh-approximated GELU),
     * per-head q/k norm, sliding layers with their own RoPE base between full ones, tied embeddings.
     */
    GEMMA3("Gemma3ForCausalLM", "gemma3_text");

    public final String hfName;
    public final String modelType;

    Architecture(String hfName, String modelType) {
      this.hfName = hfName;
      this.modelType = modelType;
    }

    static Architecture of(String hfName) {
      for (Architecture a : values()) {
        if (a.hfName.equals(hfName)) {
          return a;
        }
      }
      return null;
    }
  }

  /** The MLP's gate activation: SwiGLU's SiLU, or GeGLU's GELU in its tanh approximation. */
  public enum Activation {
    SILU("silu"),
    GELU_TANH("gelu_pytorch_tanh");

    public final String hfName;

    Activation(String hfName) {
      this.hfName = hfName;
    }
  }

  /**
   * RoPE frequency scaling: none, linear (positions ÷ factor), Llama 3's per-frequency rule, or
   * LongRoPE (Phi-3-128k, Phi-3.5, Phi-4-mini): each frequency divided by its own factor, from
   * {@code long_factor} where the served context is longer than {@code originalMaxPositions}, else
   * from {@code short_factor}, and cos and sin multiplied by {@code attentionFactor}.
   *
   * @param shortFactor LongRoPE's per-frequency divisors within the original context (empty for the others)
   * @param longFactor LongRoPE's divisors beyond it (empty for the others)
   * @param attentionFactor the factor on cos and sin ({@code rope_scaling.attention_factor}, else
   *     √(1 + ln(max_position_embeddings ÷ original) ÷ ln(original)) where that ratio exceeds 1, else 1)
   */
  public record RopeScaling(
      String type,
      double factor,
      double lowFreqFactor,
      double highFreqFactor,
      int originalMaxPositions,
      double[] shortFactor,
      double[] longFactor,
      double attentionFactor) {
    public static final RopeScaling NONE = new RopeScaling("default", 1, 1, 1, 0);

    /** Linear, Llama 3 or none: no per-frequency factors, cos and sin unscaled. */
    public RopeScaling(String type, double factor, double lowFreqFactor, double highFreqFactor, int originalMaxPositions) {
      this(type, factor, lowFreqFactor, highFreqFactor, originalMaxPositions, new double[0], new double[0], 1);
    }

    public RopeScaling {
      shortFactor = shortFactor.clone();
      longFactor = longFactor.clone();
    }

    @Override
    public double[] shortFactor() {
      return shortFactor.clone();
    }

    @Override
    public double[] longFactor() {
      return longFactor.clone();
    }

    /**
     * LongRoPE's divisors for an engine serving {@code context} positions: the long ones beyond the
     * original context (llama.cpp's rule: one set for every sequence, so cached KV never mixes them).
     */
    public double[] factorsFor(int context) {
      return factorSet(context).equals(LONG_FACTORS) ? longFactor() : shortFactor();
    }

    /** Which of LongRoPE's sets {@link #factorsFor} picks: {@code "longrope-long"}, {@code "longrope-short"}; "" for the other scalings. */
    public String factorSet(int context) {
      if (!type.equals("longrope")) {
        return "";
      }
      return context > originalMaxPositions ? LONG_FACTORS : SHORT_FACTORS;
    }

    public static final String LONG_FACTORS = "longrope-long";
    public static final String SHORT_FACTORS = "longrope-short";
  }

  public ModelConfig {
    eosTokenIds = eosTokenIds.clone();
    slidingLayers = (BitSet) slidingLayers.clone();
  }

  @Override
  public BitSet slidingLayers() {
    return (BitSet) slidingLayers.clone();
  }

  /** Whether layer {@code layer} attends over a window (see {@link #slidingWindow}). */
  public boolean slides(int layer) {
    return slidingWindow > 0 && slidingLayers.get(layer);
  }

  /** The window layer {@code layer} attends over (see {@link #slidingWindow}); 0 for every earlier position. */
  public int windowOf(int layer) {
    return slides(layer) ? slidingWindow : 0;
  }

  /** Whether every layer slides (then no token attends to more than {@link #slidingWindow}). */
  public boolean everyLayerSlides() {
    return slidingWindow > 0 && slidingLayers.cardinality() == numLayers;
  }

  /** Phi-3's checkpoints hold q, k, v in one {@code qkv_proj} and gate, up in one {@code gate_up_proj}. */
  public boolean fusedProjections() {
    return architecture == Architecture.PHI3;
  }

  /** Gemma 2 and Gemma 3, whose layers differ from Llama's alike (see {@link Architecture#GEMMA2}). */
  public boolean gemma() {
    return architecture == Architecture.GEMMA2 || architecture == Architecture.GEMMA3;
  }

  /** Gemma's RMSNorm weights are offsets: the norm multiplies by {@code 1 + w}. */
  public boolean unitOffsetNorms() {
    return gemma();
  }

  /** Gemma's norms of the attention's and the MLP's outputs, before each joins the residual stream. */
  public boolean sandwichNorms() {
    return gemma();
  }

  /**
   * The factor token embeddings are multiplied by: Gemma's √hidden, rounded to the weights' dtype as
   * Hugging Face computes it (√1152 = 33.94 is 34 in bf16); 1 for the others.
   */
  public float embeddingScale() {
    if (!gemma()) {
      return 1f;
    }
    return torchDtype.round((float) Math.sqrt(hiddenSize));
  }

  public int kvDim() {
    return numKvHeads * headDim;
  }

  public int qDim() {
    return numHeads * headDim;
  }

  /** Bytes of K and V per token with cache entries in the model's own dtype (the default KV cache dtype). */
  public long kvBytesPerToken() {
    return kvBytesPerToken(torchDtype);
  }

  /** Bytes of K and V per token with cache entries of {@code kvDtype}. */
  public long kvBytesPerToken(DType kvDtype) {
    return 2L * numLayers * kvDim() * kvDtype.bytes();
  }

  /**
   * Reads and checks {@code dir/config.json}; the end-of-sequence tokens of {@code
   * dir/generation_config.json}, where there is one, end generation too (Qwen3's config.json names
   * {@code <|im_end|>}, its generation_config.json {@code <|endoftext|>} as well).
   *
   * @throws ModelFormatException naming the file and the field that is missing, malformed or
   *     unsupported
   */
  public static ModelConfig read(Path dir) {
    ModelConfig c = readConfigJson(dir);
    int[] more = GenerationConfigFile.read(dir).eosTokenIds();
    int[] eos = java.util.stream.IntStream.concat(java.util.Arrays.stream(c.eosTokenIds), java.util.Arrays.stream(more)).distinct().toArray();
    return new ModelConfig(c.architecture, c.hiddenSize, c.intermediateSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim,
        c.vocabSize, c.rmsNormEps, c.ropeTheta, c.ropeScaling, c.rotaryDim, c.maxPositionEmbeddings, c.activation, c.slidingWindow, c.slidingLayers,
        c.localRopeTheta, c.queryPreAttnScalar, c.attnLogitSoftcap, c.finalLogitSoftcap, c.tieWordEmbeddings, c.qkvBias, c.outputBias, c.qkNorm, eos,
        c.torchDtype);
  }

  private static ModelConfig readConfigJson(Path dir) {
    Path file = dir.resolve("config.json");
    if (!Files.isRegularFile(file)) {
      throw new ModelFormatException(file + ": file does not exist");
    }
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(file.toFile());
    } catch (IOException e) {
      throw new ModelFormatException(file + ": not valid JSON: " + e.getMessage());
    }
    return parse(file.toString(), root);
  }

  /** A config.json already parsed; {@code file} names it in errors. */
  public static ModelConfig parse(String file, JsonNode root) {
    JsonNode archs = root.path("architectures");
    if (!archs.isArray() || archs.isEmpty()) {
      throw new ModelFormatException(file + ": field 'architectures' is missing");
    }
    String archName = archs.get(0).asText();
    if (archName.equals(GEMMA3_MULTIMODAL)) { // its text model: text_config, the vision tower left unread
      if (!root.path("text_config").isObject()) {
        throw new ModelFormatException(file + ": field 'text_config' is missing (" + GEMMA3_MULTIMODAL + " keeps its text model there)");
      }
      file = file + " (text_config)";
      ObjectNode text = ((ObjectNode) root.get("text_config")).deepCopy();
      for (String inherited : List.of("torch_dtype", "eos_token_id")) {
        if (!text.hasNonNull(inherited) && root.hasNonNull(inherited)) {
          text.set(inherited, root.get(inherited));
        }
      }
      root = text.set("architectures", text.arrayNode().add(Architecture.GEMMA3.hfName));
      archName = Architecture.GEMMA3.hfName;
    }
    if (archName.endsWith(SEQUENCE_CLASSIFICATION) && Architecture.of(causalOf(archName)) != null) {
      archName = causalOf(archName); // the same transformer; its score head is read beside it (ModelWeights.scoreHead)
    }
    Architecture arch = Architecture.of(archName);
    if (arch == Architecture.GEMMA3) {
      root = withGemma3Defaults((ObjectNode) root);
    }
    Fields f = new Fields(file, root);
    if (arch == null) {
      throw new ModelFormatException(
          file + ": field 'architectures' names " + archName
              + ", which the built-in engine does not run (supported: "
              + java.util.Arrays.stream(Architecture.values()).map(a -> a.hfName).collect(java.util.stream.Collectors.joining(", ")) + ")");
    }
    boolean gemma = arch == Architecture.GEMMA2 || arch == Architecture.GEMMA3;
    Activation activation = activation(file, root, gemma);
    if (gemma) {
      refuseGemmaVariants(file, root);
    }
    if (root.path("mlp_bias").asBoolean(false)) {
      throw new ModelFormatException(file + ": field 'mlp_bias' is true; MLP biases are not supported");
    }
    if (root.has("quantization_config")) { // GPTQ, AWQ, FP8, bitsandbytes: packed tensors this engine does not read
      throw new ModelFormatException(file + ": field 'quantization_config' (quant_method "
          + root.path("quantization_config").path("quant_method").asText("unknown")
          + ") marks a pre-quantized checkpoint, which the built-in engine does not read; serve the f16/bf16 checkpoint,"
          + " quantized at load with --quantization q8_0 or q4_0");
    }
    int hidden = f.positiveInt("hidden_size");
    int heads = f.positiveInt("num_attention_heads");
    int kvHeads = root.has("num_key_value_heads") ? f.positiveInt("num_key_value_heads") : heads;
    if (heads % kvHeads != 0) {
      throw new ModelFormatException(
          file + ": field 'num_key_value_heads' (" + kvHeads + ") must divide num_attention_heads (" + heads + ")");
    }
    int headDim;
    if (root.hasNonNull("head_dim")) {
      headDim = f.positiveInt("head_dim");
    } else if (hidden % heads == 0) {
      headDim = hidden / heads;
    } else {
      throw new ModelFormatException(file + ": field 'head_dim' is missing and hidden_size is not a multiple of the heads");
    }
    if (headDim % 2 != 0) {
      throw new ModelFormatException(file + ": field 'head_dim' must be even for RoPE, was " + headDim);
    }
    int rotaryDim = rotaryDim(file, root.path("partial_rotary_factor"), headDim);
    int maxPositions = root.path("max_position_embeddings").asInt(4096);
    boolean attentionBias = root.path("attention_bias").asBoolean(false);
    int layers = f.positiveInt("num_hidden_layers");
    if (layers > MAX_LAYERS) { // per-layer tables follow (sliding layers, RoPE bases, weights)
      throw new ModelFormatException(file + ": field 'num_hidden_layers' is " + layers + "; at most " + MAX_LAYERS + " are supported");
    }
    // Mistral and Phi-3 slide in every layer where they name a window; Qwen2 and Qwen3 only with
    // use_sliding_window, from max_window_layers on (Hugging Face's rule, its default 28); Gemma 2 in
    // every other layer from the first; Gemma 3 in all but every sliding_window_pattern-th layer (its
    // default 6). layer_types, where a config lists them, say which.
    boolean qwen = arch == Architecture.QWEN2 || arch == Architecture.QWEN3;
    int window = 0;
    BitSet sliding = new BitSet(layers);
    if (arch == Architecture.MISTRAL || arch == Architecture.PHI3 || gemma || (qwen && root.path("use_sliding_window").asBoolean(false))) {
      window = slidingWindow(file, root.path("sliding_window"), qwen || gemma);
      if (window > 0 && root.has("layer_types")) {
        sliding = slidingLayers(file, root.path("layer_types"), layers);
      } else if (window > 0 && gemma) {
        int pattern = arch == Architecture.GEMMA2 ? 2 : f.positiveInt("sliding_window_pattern");
        for (int l = 0; l < layers; l++) {
          sliding.set(l, (l + 1) % pattern != 0);
        }
      } else if (window > 0) {
        sliding.set(qwen ? Math.min(layers, f.nonNegativeInt("max_window_layers", 28)) : 0, layers);
      }
    }
    if (sliding.isEmpty()) {
      window = 0;
    }
    return new ModelConfig(
        arch,
        hidden,
        f.positiveInt("intermediate_size"),
        layers,
        heads,
        kvHeads,
        headDim,
        f.positiveInt("vocab_size"),
        (float) f.positiveDouble("rms_norm_eps", 1e-6),
        f.positiveDouble("rope_theta", 10_000),
        ropeScaling(file, root, rotaryDim, maxPositions),
        rotaryDim,
        maxPositions,
        activation,
        window,
        sliding,
        arch == Architecture.GEMMA3 ? f.positiveDouble("rope_local_base_freq", Double.NaN) : 0,
        gemma ? f.positiveDouble("query_pre_attn_scalar", Double.NaN) : headDim,
        gemma ? softcap(f, root, "attn_logit_softcapping", arch == Architecture.GEMMA2 ? GEMMA2_ATTN_SOFTCAP : 0) : 0,
        gemma ? softcap(f, root, "final_logit_softcapping", arch == Architecture.GEMMA2 ? GEMMA2_FINAL_SOFTCAP : 0) : 0,
        root.path("tie_word_embeddings").asBoolean(false),
        arch == Architecture.QWEN2 || attentionBias,
        arch != Architecture.QWEN2 && attentionBias,
        arch == Architecture.QWEN3 || arch == Architecture.GEMMA3,
        GenerationConfigFile.tokenIds(file, root.path("eos_token_id")),
        dtype(file, root.path("torch_dtype")));
  }

  /** Gemma2Config's defaults for a config.json that leaves the caps out (null turns one off). */
  private static final double GEMMA2_ATTN_SOFTCAP = 50;
  private static final double GEMMA2_FINAL_SOFTCAP = 30;

  /** A tanh cap: the field's positive value, 0 where it is null, {@code absent} where it is missing. */
  private static double softcap(Fields f, JsonNode root, String field, double absent) {
    if (!root.has(field)) {
      return absent;
    }
    return root.get(field).isNull() ? 0 : f.positiveDouble(field, Double.NaN);
  }

  /** More layers than any published decoder has (Llama 3.1 405B: 126). */
  private static final int MAX_LAYERS = 4096;

  /** Gemma 3 from 4B up (its text model is served; images are not). */
  public static final String GEMMA3_MULTIMODAL = "Gemma3ForConditionalGeneration";

  /** A sequence classifier's architecture ends so (Qwen3ForSequenceClassification): its causal twin's body, a score head. */
  public static final String SEQUENCE_CLASSIFICATION = "ForSequenceClassification";

  /** The causal model whose body a {@code XForSequenceClassification} has: {@code XForCausalLM}. */
  private static String causalOf(String sequenceClassifier) {
    return sequenceClassifier.substring(0, sequenceClassifier.length() - SEQUENCE_CLASSIFICATION.length()) + "ForCausalLM";
  }

  /**
   * Gemma3TextConfig's defaults (transformers' configuration_gemma3.py) for the fields a config.json
   * leaves out: Gemma 3 4B's {@code text_config} names only its width, depth, window and RoPE scaling.
   */
  private static final Map<String, Object> GEMMA3_DEFAULTS = Map.ofEntries(
      Map.entry("vocab_size", 262_208), Map.entry("hidden_size", 2304), Map.entry("intermediate_size", 9216),
      Map.entry("num_hidden_layers", 26), Map.entry("num_attention_heads", 8), Map.entry("num_key_value_heads", 4),
      Map.entry("head_dim", 256), Map.entry("max_position_embeddings", 131_072), Map.entry("rope_theta", 1_000_000.0),
      Map.entry("query_pre_attn_scalar", 256), Map.entry("sliding_window", 4096), Map.entry("sliding_window_pattern", 6),
      Map.entry("rope_local_base_freq", 10_000.0), Map.entry("tie_word_embeddings", true), Map.entry("eos_token_id", 1));

  private static JsonNode withGemma3Defaults(ObjectNode config) {
    ObjectNode c = config.deepCopy();
    GEMMA3_DEFAULTS.forEach((field, value) -> {
      if (!c.has(field)) {
        c.set(field, new ObjectMapper().valueToTree(value));
      }
    });
    return c;
  }

  /** {@code hidden_act} (Gemma: {@code hidden_activation}, which wins where both are given). */
  private static Activation activation(String file, JsonNode root, boolean gemma) {
    String field = gemma && root.hasNonNull("hidden_activation") ? "hidden_activation" : "hidden_act";
    String name = root.path(field).asText(gemma ? Activation.GELU_TANH.hfName : Activation.SILU.hfName);
    for (Activation a : Activation.values()) {
      if (a.hfName.equals(name) || (a == Activation.GELU_TANH && name.equals("gelu_new"))) {
        return a;
      }
    }
    throw new ModelFormatException(file + ": field '" + field + "' is " + name + "; supported: silu, gelu_pytorch_tanh");
  }

  /**
   * Gemma configurations whose forward pass differs from the one run here: bidirectional attention
   * (EmbeddingGemma), per-type {@code rope_parameters} (newer transformers releases; the same model
   * written with {@code rope_theta} and {@code rope_local_base_freq} is served).
   */
  private static void refuseGemmaVariants(String file, JsonNode root) {
    if (root.path("use_bidirectional_attention").asBoolean(false)) {
      throw new ModelFormatException(file + ": field 'use_bidirectional_attention' is true; the built-in engine runs causal decoders only");
    }
    if (root.hasNonNull("rope_parameters")) {
      throw new ModelFormatException(file + ": field 'rope_parameters' is not supported; give rope_theta, rope_local_base_freq and rope_scaling");
    }
  }

  /**
   * RoPE's share of each head ({@code partial_rotary_factor}, default 1) as a count of dimensions:
   * Hugging Face's {@code int(head_dim × factor)}, which must be even and positive.
   */
  private static int rotaryDim(String file, JsonNode factor, int headDim) {
    if (factor.isMissingNode() || factor.isNull()) {
      return headDim;
    }
    if (!factor.isNumber() || !(factor.asDouble() > 0) || factor.asDouble() > 1) {
      throw new ModelFormatException(file + ": field 'partial_rotary_factor' must be a number in (0, 1], was " + factor);
    }
    int dim = (int) (headDim * factor.asDouble());
    if (dim < 2 || dim % 2 != 0) {
      throw new ModelFormatException(file + ": field 'partial_rotary_factor' (" + factor + ") rotates " + dim + " of head_dim "
          + headDim + "; RoPE needs an even, positive number of dimensions");
    }
    return dim;
  }

  private static RopeScaling ropeScaling(String file, JsonNode root, int rotaryDim, int maxPositions) {
    JsonNode node = root.path("rope_scaling");
    if (node.isMissingNode() || node.isNull()) {
      return RopeScaling.NONE;
    }
    String type = node.path("rope_type").asText(node.path("type").asText("default"));
    Fields f = new Fields(file, node, "rope_scaling.");
    return switch (type) {
      case "default" -> RopeScaling.NONE;
      case "linear" -> new RopeScaling("linear", f.positiveDouble("factor", Double.NaN), 1, 1, 0);
      case "llama3" ->
          new RopeScaling(
              "llama3",
              f.positiveDouble("factor", Double.NaN),
              f.positiveDouble("low_freq_factor", Double.NaN),
              f.positiveDouble("high_freq_factor", Double.NaN),
              f.positiveInt("original_max_position_embeddings"));
      case "longrope", "su" -> longRope(file, root, node, rotaryDim, maxPositions); // "su": Phi-3-128k's first configs
      default ->
          throw new ModelFormatException(
              file + ": field 'rope_scaling.rope_type' is " + type + "; supported: default, linear, llama3, longrope");
    };
  }

  /**
   * LongRoPE as transformers reads it: the original context from the top-level {@code
   * original_max_position_embeddings} (Phi-3's place; its ratio to max_position_embeddings is the
   * factor), else from rope_scaling's, else max_position_embeddings with rope_scaling's {@code
   * factor}; one short and one long divisor per rotated dimension pair.
   */
  private static RopeScaling longRope(String file, JsonNode root, JsonNode node, int rotaryDim, int maxPositions) {
    Fields f = new Fields(file, node, "rope_scaling.");
    int original;
    double factor;
    if (root.hasNonNull("original_max_position_embeddings")) {
      original = new Fields(file, root).positiveInt("original_max_position_embeddings");
      factor = (double) maxPositions / original;
    } else if (node.hasNonNull("original_max_position_embeddings")) {
      original = f.positiveInt("original_max_position_embeddings");
      factor = (double) maxPositions / original;
    } else {
      original = maxPositions;
      factor = f.positiveDouble("factor", 1);
    }
    double attention = f.positiveDouble("attention_factor",
        factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(original)));
    return new RopeScaling("longrope", factor, 1, 1, original,
        f.divisors("short_factor", rotaryDim / 2), f.divisors("long_factor", rotaryDim / 2), attention);
  }

  /**
   * The window: a positive token count (Mistral v0.1: 4,096), or null for none (Mistral v0.2 on,
   * Nemo) — not with {@code use_sliding_window}, which asks for one.
   */
  private static int slidingWindow(String file, JsonNode node, boolean required) {
    if ((node.isMissingNode() || node.isNull()) && !required) {
      return 0;
    }
    if (!node.isIntegralNumber() || !node.canConvertToInt() || node.asInt() <= 0) {
      throw new ModelFormatException(file + ": field 'sliding_window' must be a positive integer"
          + (required ? " when use_sliding_window is true" : " or null") + ", was " + node);
    }
    return node.asInt();
  }

  /** The layers {@code layer_types} lists as {@code sliding_attention} (the others: {@code full_attention}). */
  private static BitSet slidingLayers(String file, JsonNode types, int layers) {
    if (!types.isArray() || types.size() != layers) {
      throw new ModelFormatException(file + ": field 'layer_types' must list one type per layer (" + layers + "), was " + types);
    }
    BitSet sliding = new BitSet(layers);
    for (int i = 0; i < layers; i++) {
      String type = types.get(i).asText();
      if (!type.equals("full_attention") && !type.equals("sliding_attention")) {
        throw new ModelFormatException(file + ": field 'layer_types[" + i + "]' is " + types.get(i)
            + "; supported: full_attention, sliding_attention");
      }
      sliding.set(i, type.equals("sliding_attention"));
    }
    return sliding;
  }

  private static DType dtype(String file, JsonNode node) {
    if (node.isMissingNode() || node.isNull()) {
      return DType.BF16;
    }
    try {
      return DType.fromTorchName(node.asText());
    } catch (IllegalArgumentException e) {
      throw new ModelFormatException(file + ": field 'torch_dtype': " + e.getMessage());
    }
  }

  /** Reads fields of {@code root}, an object at {@code path} in {@code file} ("" for the top level, else "rope_scaling."). */
  private record Fields(String file, JsonNode root, String path) {
    Fields(String file, JsonNode root) {
      this(file, root, "");
    }

    int positiveInt(String name) {
      JsonNode n = root.path(name);
      if (n.isMissingNode() || n.isNull()) {
        throw new ModelFormatException(file + ": field '" + path + name + "' is missing");
      }
      if (!n.canConvertToInt() || !n.isIntegralNumber() || n.asInt() <= 0) {
        throw new ModelFormatException(file + ": field '" + path + name + "' must be a positive integer, was " + n);
      }
      return n.asInt();
    }

    int nonNegativeInt(String name, int fallback) {
      JsonNode n = root.path(name);
      if (n.isMissingNode() || n.isNull()) {
        return fallback;
      }
      if (!n.canConvertToInt() || !n.isIntegralNumber() || n.asInt() < 0) {
        throw new ModelFormatException(file + ": field '" + path + name + "' must be a non-negative integer, was " + n);
      }
      return n.asInt();
    }

    /** An array of {@code n} positive numbers ({@code n}: one per rotated dimension pair). */
    double[] divisors(String name, int n) {
      JsonNode a = root.path(name);
      if (!a.isArray() || a.size() != n) {
        throw new ModelFormatException(file + ": field '" + path + name + "' must list " + n
            + " numbers (one per rotated dimension pair: head_dim × partial_rotary_factor ÷ 2), was "
            + (a.isArray() ? a.size() + " of them" : a.toString()));
      }
      double[] out = new double[n];
      for (int i = 0; i < n; i++) {
        if (!a.get(i).isNumber() || !(a.get(i).asDouble() > 0)) {
          throw new ModelFormatException(file + ": field '" + path + name + "[" + i + "]' must be a positive number, was " + a.get(i));
        }
        out[i] = a.get(i).asDouble();
      }
      return out;
    }

    double positiveDouble(String name, double fallback) {
      JsonNode n = root.path(name);
      if (n.isMissingNode() || n.isNull()) {
        if (Double.isNaN(fallback)) {
          throw new ModelFormatException(file + ": field '" + path + name + "' is missing");
        }
        return fallback;
      }
      if (!n.isNumber() || n.asDouble() <= 0) {
        throw new ModelFormatException(file + ": field '" + path + name + "' must be a positive number, was " + n);
      }
      return n.asDouble();
    }
  }
}
