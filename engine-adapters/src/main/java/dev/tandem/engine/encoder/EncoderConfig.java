package dev.tandem.engine.encoder;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tandem.engine.model.ModelFormatException;
import dev.tandem.engine.model.PoolingConfig;
import java.nio.file.Path;
import java.util.Set;

/**
 * A bidirectional encoder's {@code config.json} (BERT, RoBERTa, XLM-RoBERTa: what
 * sentence-transformers' embedding models are built on — all-MiniLM, bge, e5, gte-base, bge-m3):
 * its shape, activation, where positions start, and the prefix its weights carry.
 *
 * @param positionOffset the first position's index in the position embeddings (RoBERTa counts from
 *     its padding id + 1, BERT from 0)
 * @param tanhGelu the MLP's GELU is tanh-approximated ({@code gelu_new}, {@code gelu_pytorch_tanh});
 *     else exact (erf)
 */
public record EncoderConfig(
    String file,
    String modelType,
    int vocabSize,
    int hidden,
    int layers,
    int heads,
    int intermediate,
    int maxPositions,
    int typeVocabSize,
    float layerNormEps,
    boolean tanhGelu,
    int positionOffset) {

  private static final Set<String> MODEL_TYPES = Set.of("bert", "roberta", "xlm-roberta");

  /** Most tokens an input may have: the position embeddings there are past the offset. */
  public int maxTokens() {
    return maxPositions - positionOffset;
  }

  /** True if {@code dir}'s config.json describes an encoder this package runs (by its {@code model_type}). */
  public static boolean isEncoder(Path dir) {
    JsonNode root = PoolingConfig.json(dir.resolve("config.json"));
    return root != null && MODEL_TYPES.contains(root.path("model_type").asText(""));
  }

  /**
   * Reads {@code dir}'s config.json.
   *
   * @throws ModelFormatException naming the file and field that is missing or not supported
   */
  public static EncoderConfig read(Path dir) {
    Path path = dir.resolve("config.json");
    JsonNode root = PoolingConfig.json(path);
    if (root == null) {
      throw new ModelFormatException(path + ": missing");
    }
    return parse(path.toString(), root);
  }

  /**
   * A config.json already parsed; {@code file} names it in errors.
   *
   * @throws ModelFormatException naming the file and field that is missing or not supported
   */
  public static EncoderConfig parse(String file, JsonNode root) {
    String type = root.path("model_type").asText("");
    if (!MODEL_TYPES.contains(type)) {
      throw new ModelFormatException(file + ": field 'model_type' is '" + type + "', not an encoder (bert, roberta, xlm-roberta)");
    }
    String arch = root.path("architectures").path(0).asText("");
    if (!arch.isEmpty() && !arch.endsWith("Model") && !arch.endsWith("ForMaskedLM") && !arch.endsWith("ForPreTraining")) {
      throw new ModelFormatException(file + ": field 'architectures' names " + arch + ", whose head Tandem does not run (an"
          + " encoder is served for its pooled states: *Model, *ForMaskedLM, *ForPreTraining; cross-encoders are not served yet)");
    }
    String positions = root.path("position_embedding_type").asText("absolute");
    if (!positions.equals("absolute")) {
      throw new ModelFormatException(file + ": field 'position_embedding_type' is '" + positions + "'; only 'absolute' is supported");
    }
    if (root.path("is_decoder").asBoolean(false)) {
      throw new ModelFormatException(file + ": field 'is_decoder' is true: a causal " + type + " is not an encoder");
    }
    String act = root.path("hidden_act").asText("gelu");
    boolean tanh = switch (act) {
      case "gelu" -> false;
      case "gelu_new", "gelu_pytorch_tanh" -> true;
      default -> throw new ModelFormatException(file + ": field 'hidden_act' is '" + act + "'; supported: gelu, gelu_new, gelu_pytorch_tanh");
    };
    int hidden = positive(file, root, "hidden_size");
    int heads = positive(file, root, "num_attention_heads");
    if (hidden % heads != 0) {
      throw new ModelFormatException(file + ": field 'hidden_size' (" + hidden + ") is not a multiple of 'num_attention_heads' (" + heads + ")");
    }
    boolean roberta = !type.equals("bert");
    JsonNode pad = root.get("pad_token_id");
    if (roberta && pad != null && (!pad.canConvertToInt() || pad.asInt() < 0 || pad.asInt() >= Integer.MAX_VALUE - 1)) {
      throw new ModelFormatException(file + ": field 'pad_token_id' is not a token id");
    }
    int offset = roberta ? (pad == null ? 1 : pad.asInt()) + 1 : 0;
    int maxPositions = positive(file, root, "max_position_embeddings");
    if (maxPositions <= offset) {
      throw new ModelFormatException(file + ": field 'max_position_embeddings' (" + maxPositions + ") leaves no position past the padding id");
    }
    return new EncoderConfig(file, type, positive(file, root, "vocab_size"), hidden, positive(file, root, "num_hidden_layers"), heads,
        positive(file, root, "intermediate_size"), maxPositions, root.has("type_vocab_size") ? positive(file, root, "type_vocab_size") : 2,
        eps(file, root), tanh, offset);
  }

  private static float eps(String file, JsonNode root) {
    JsonNode v = root.get("layer_norm_eps");
    if (v == null) {
      return 1e-12f;
    }
    if (!v.isNumber() || !(v.asDouble() > 0) || !Double.isFinite(v.asDouble())) {
      throw new ModelFormatException(file + ": field 'layer_norm_eps' is not a positive number");
    }
    return (float) v.asDouble();
  }

  private static int positive(String file, JsonNode root, String field) {
    JsonNode v = root.get(field);
    if (v == null || !v.canConvertToInt() || v.asInt() <= 0) {
      throw new ModelFormatException(file + ": field '" + field + "' is missing or not a positive integer");
    }
    return v.asInt();
  }
}
