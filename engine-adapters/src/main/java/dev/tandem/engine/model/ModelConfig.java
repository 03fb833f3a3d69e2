package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The transformer's shape, read from a Hugging Face {@code config.json}: LlamaForCausalLM,
 * MistralForCausalLM, Qwen2ForCausalLM and Qwen3ForCausalLM (grouped-query attention, RoPE with
 * optional Llama-3 or linear scaling, RMSNorm, SwiGLU, Qwen2's qkv bias, Qwen3's per-head q/k
 * RMSNorm, tied embeddings).
 *
 * @param maxPositionEmbeddings config.json's {@code max_position_embeddings}
 * @param slidingWindow {@code sliding_window}: in a sliding layer each token attends to at most this
 *     many positions (itself included); 0 for none (Mistral v0.2 on; Qwen2 and Qwen3 unless {@code
 *     use_sliding_window})
 * @param firstSlidingLayer the layers from this one on slide (Mistral: all; Qwen2 and Qwen3: from
 *     {@code max_window_layers}, or as {@code layer_types} lists them); the ones before attend to
 *     every earlier position

 * @param qkvBias q, k and v projections carry a bias (Qwen2 always; Llama and Qwen3 with
 *     attention_bias)
 * @param outputBias the output projection carries a bias (Llama and Qwen3 with attention_bias)
 * @param qkNorm per-head RMSNorm of queries and keys before RoPE (Qwen3)
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
    int maxPositionEmbeddings,
    int slidingWindow,
    int firstSlidingLayer,
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
    QWEN2("Qwen2ForCausalLM", "qwen2"),
    QWEN3("Qwen3ForCausalLM", "qwen3");

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

  /**
   * RoPE frequency scaling: none, linear (positions ÷ factor), or Llama 3's per-frequency rule.
   */
  public record RopeScaling(
      String type, double factor, double lowFreqFactor, double highFreqFactor, int originalMaxPositions) {
    public static final RopeScaling NONE = new RopeScaling("default", 1, 1, 1, 0);
  }

  public ModelConfig {
    eosTokenIds = eosTokenIds.clone();
  }

  /** The window layer {@code layer} attends over (see {@link #slidingWindow}); 0 for every earlier position. */
  public int windowOf(int layer) {
    return layer >= firstSlidingLayer ? slidingWindow : 0;
  }

  /** Whether every layer slides (then no token attends to more than {@link #slidingWindow}). */
  public boolean everyLayerSlides() {
    return slidingWindow > 0 && firstSlidingLayer == 0;
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
        c.vocabSize, c.rmsNormEps, c.ropeTheta, c.ropeScaling, c.maxPositionEmbeddings, c.slidingWindow, c.firstSlidingLayer, c.tieWordEmbeddings, c.qkvBias,
        c.outputBias, c.qkNorm, eos, c.torchDtype);
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
    Fields f = new Fields(file, root);
    JsonNode archs = root.path("architectures");
    if (!archs.isArray() || archs.isEmpty()) {
      throw new ModelFormatException(file + ": field 'architectures' is missing");
    }
    String archName = archs.get(0).asText();
    Architecture arch = Architecture.of(archName);
    if (arch == null) {
      throw new ModelFormatException(
          file + ": field 'architectures' names " + archName
              + ", which the built-in engine does not run (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)");
    }
    String act = root.path("hidden_act").asText("silu");
    if (!act.equals("silu")) {
      throw new ModelFormatException(file + ": field 'hidden_act' is " + act + "; only silu is supported");
    }
    if (root.path("mlp_bias").asBoolean(false)) {
      throw new ModelFormatException(file + ": field 'mlp_bias' is true; MLP biases are not supported");
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
    boolean attentionBias = root.path("attention_bias").asBoolean(false);
    int layers = f.positiveInt("num_hidden_layers");
    // Mistral slides in every layer where it names a window; Qwen2 and Qwen3 only with
    // use_sliding_window, from max_window_layers on (Hugging Face's rule, its default 28).
    boolean qwen = arch == Architecture.QWEN2 || arch == Architecture.QWEN3;
    int window = 0;
    int firstSliding = layers;
    if (arch == Architecture.MISTRAL || (qwen && root.path("use_sliding_window").asBoolean(false))) {
      window = slidingWindow(file, root.path("sliding_window"), qwen);
      firstSliding = window == 0 ? layers : qwen ? Math.min(layers, f.nonNegativeInt("max_window_layers", 28)) : 0;
      if (window > 0 && root.has("layer_types")) {
        firstSliding = firstSlidingLayer(file, root.path("layer_types"), layers);
      }
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
        ropeScaling(file, root.path("rope_scaling")),
        root.path("max_position_embeddings").asInt(4096),
        firstSliding < layers ? window : 0,
        firstSliding,
        root.path("tie_word_embeddings").asBoolean(false),
        arch == Architecture.QWEN2 || attentionBias,
        arch != Architecture.QWEN2 && attentionBias,
        arch == Architecture.QWEN3,
        GenerationConfigFile.tokenIds(file, root.path("eos_token_id")),
        dtype(file, root.path("torch_dtype")));
  }

  private static RopeScaling ropeScaling(String file, JsonNode node) {
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
      default ->
          throw new ModelFormatException(
              file + ": field 'rope_scaling.rope_type' is " + type + "; supported: default, linear, llama3");
    };
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

  /**
   * The first sliding layer {@code layer_types} lists: full attention layers, then sliding ones (the
   * layout Mistral and Qwen use); other layouts (Gemma's alternation) are refused.
   */
  private static int firstSlidingLayer(String file, JsonNode types, int layers) {
    if (!types.isArray() || types.size() != layers) {
      throw new ModelFormatException(file + ": field 'layer_types' must list one type per layer (" + layers + "), was " + types);
    }
    int first = layers;
    for (int i = 0; i < layers; i++) {
      String type = types.get(i).asText();
      if (!type.equals("full_attention") && !type.equals("sliding_attention")) {
        throw new ModelFormatException(file + ": field 'layer_types[" + i + "]' is " + types.get(i)
            + "; supported: full_attention, sliding_attention");
      }
      boolean sliding = type.equals("sliding_attention");
      if (sliding && first == layers) {
        first = i;
      } else if (!sliding && first < layers) {
        throw new ModelFormatException(file + ": field 'layer_types' has a full_attention layer (" + i + ") after a sliding one ("
            + first + "); the built-in engine runs full layers first, then sliding ones");
      }
    }
    return first;
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
