package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A LoRA adapter in PEFT's format ({@code adapter_config.json} and {@code adapter_model.safetensors},
 * as {@code peft}'s {@code save_pretrained} writes them), loaded for one base model: for each
 * adapted projection of each layer, the low-rank pair whose product is added to the projection's
 * output, {@code y = W·x + B·(A·x)}, with PEFT's scaling ({@code lora_alpha / r}, or {@code
 * lora_alpha / √r} with {@code use_rslora}) folded into B. Both are kept in f32, whatever the
 * file stores. Fused projections (Phi-3's {@code qkv_proj} and {@code gate_up_proj}) share one A
 * and split their B by rows into the q, k, v (gate, up) parts.
 *
 * <p>What PEFT can express and this engine does not apply is refused when the adapter loads,
 * naming the file and field: DoRA, per-module ranks or alphas, trained biases, extra modules
 * ({@code modules_to_save}), adapted embeddings or LM head, a rank above {@code --max-lora-rank}.
 * Immutable (its arrays are not changed after loading).
 */
public final class LoraAdapter {
  /** An adapter as the command line names it: the name requests use, and its directory. */
  public record Source(String name, Path dir) {}

  /** The projections an adapter may change: the seven matrices of {@link LayerWeights}. */
  public enum Target {
    Q, K, V, O, GATE, UP, DOWN;

    /** The projection's input width in a model of {@code c}. */
    public int inputs(ModelConfig c) {
      return switch (this) {
        case O -> c.qDim();
        case DOWN -> c.intermediateSize();
        default -> c.hiddenSize();
      };
    }

    /** The projection's output width in a model of {@code c}. */
    public int outputs(ModelConfig c) {
      return switch (this) {
        case Q -> c.qDim();
        case K, V -> c.kvDim();
        case O, DOWN -> c.hiddenSize();
        case GATE, UP -> c.intermediateSize();
      };
    }
  }

  /**
   * PEFT's module names and the projections each changes, in the order of its B's rows: Phi-3's
   * fused modules change several.
   */
  public static final Map<String, List<Target>> MODULES = Map.of(
      "q_proj", List.of(Target.Q), "k_proj", List.of(Target.K), "v_proj", List.of(Target.V), "o_proj", List.of(Target.O),
      "gate_proj", List.of(Target.GATE), "up_proj", List.of(Target.UP), "down_proj", List.of(Target.DOWN),
      "qkv_proj", List.of(Target.Q, Target.K, Target.V), "gate_up_proj", List.of(Target.GATE, Target.UP));

  /**
   * One projection's low-rank change, laid out for {@link
   * dev.tandem.engine.compute.ComputeBackend#addLowRank}: in {@code values}, A's rows from {@code
   * aAt} (rank × in) and B's columns from {@code bAt} (rank × out, scaled), each contiguous. Every
   * delta of an adapter shares one array: one allocation the size of the adapter, which the
   * garbage collector places among old objects at once and never copies (a copy of every array
   * of a large adapter paused the engine for 50–200 ms after each load here).
   */
  public record Delta(float[] values, int aAt, int bAt, int rank, int in, int out) {}

  private static final Pattern TENSOR = Pattern.compile(
      "(?:.*\\.)?layers\\.(\\d+)\\.(?:self_attn|mlp)\\.(" + String.join("|", MODULES.keySet()) + ")"
          + "\\.lora_([AB])(?:\\.[A-Za-z0-9_-]+)?\\.weight");

  private final String name;
  private final Path dir;
  private final int rank;
  private final double scaling;
  private final List<Map<Target, Delta>> layers; // per layer: the projections this adapter changes there

  private LoraAdapter(String name, Path dir, int rank, double scaling, List<Map<Target, Delta>> layers) {
    this.name = name;
    this.dir = dir;
    this.rank = rank;
    this.scaling = scaling;
    this.layers = layers;
  }

  public String name() {
    return name;
  }

  public Path dir() {
    return dir;
  }

  public int rank() {
    return rank;
  }

  /** PEFT's scaling, folded into every B. */
  public double scaling() {
    return scaling;
  }

  /** The change to layer {@code layer}'s projection {@code target}, or null where the adapter leaves it as it is. */
  public Delta delta(int layer, Target target) {
    return layers.get(layer).get(target);
  }

  /** How many projections the adapter changes, over every layer. */
  public int deltaCount() {
    return layers.stream().mapToInt(Map::size).sum();
  }

  /**
   * Reads the adapter in {@code source.dir()} for a model of {@code config}.
   *
   * @throws ModelFormatException naming the file and field when the adapter cannot be applied
   */
  public static LoraAdapter load(Source source, ModelConfig config, int maxRank) {
    Path configFile = source.dir().resolve("adapter_config.json");
    JsonNode root = readJson(configFile);
    int rank = intField(configFile, root, "r", -1);
    if (rank < 1) {
      throw new ModelFormatException(configFile + ": field 'r' must be a positive integer (the adapter's rank)");
    }
    if (rank > maxRank) {
      throw new ModelFormatException(configFile + ": field 'r' is " + rank + ", above --max-lora-rank " + maxRank
          + " (raise --max-lora-rank to serve this adapter)");
    }
    refuseUnsupported(configFile, root);
    double alpha = root.path("lora_alpha").isMissingNode() ? 8 : root.path("lora_alpha").asDouble(Double.NaN);
    if (!Double.isFinite(alpha)) {
      throw new ModelFormatException(configFile + ": field 'lora_alpha' must be a number");
    }
    double scaling = root.path("use_rslora").asBoolean(false) ? alpha / Math.sqrt(rank) : alpha / rank;

    Path weightsFile = source.dir().resolve("adapter_model.safetensors");
    if (!Files.isRegularFile(weightsFile)) {
      throw new ModelFormatException(weightsFile + ": file does not exist"
          + (Files.isRegularFile(source.dir().resolve("adapter_model.bin")) ? " (adapter_model.bin, a pickle, is not read: save the adapter with safe_serialization)" : ""));
    }
    List<Map<Target, Delta>> layers = new ArrayList<>();
    for (int l = 0; l < config.numLayers(); l++) {
      layers.add(new EnumMap<>(Target.class));
    }
    try (SafetensorsFile file = SafetensorsFile.open(weightsFile)) {
      Map<String, Tensor[]> pairs = new TreeMap<>(); // "layer.module" -> {A, B}
      for (Tensor t : file.tensors().values()) {
        Matcher m = TENSOR.matcher(t.name());
        if (!m.matches()) {
          throw new ModelFormatException(weightsFile + ": tensor '" + t.name()
              + "' is not a LoRA A or B of a layer's q/k/v/o, gate/up/down (or qkv/gate_up) projection; adapted embeddings, LM heads and biases are not applied");
        }
        int layer = Integer.parseInt(m.group(1));
        if (layer >= config.numLayers()) {
          throw new ModelFormatException(weightsFile + ": tensor '" + t.name() + "' names layer " + layer + " of a model with "
              + config.numLayers() + " layers (an adapter for another model?)");
        }
        Tensor[] pair = pairs.computeIfAbsent(layer + "." + m.group(2), k -> new Tensor[2]);
        pair[m.group(3).equals("A") ? 0 : 1] = t;
      }
      if (pairs.isEmpty()) {
        throw new ModelFormatException(weightsFile + ": no LoRA tensors (lora_A / lora_B of a layer's projection)");
      }
      long total = 0;
      for (Map.Entry<String, Tensor[]> e : pairs.entrySet()) {
        total += check(weightsFile, config, module(e.getKey()), e.getValue(), rank);
      }
      if (total > Integer.MAX_VALUE - 16) {
        throw new ModelFormatException(weightsFile + ": " + total + " values; an adapter of more than 2^31 values is not served");
      }
      float[] values = new float[(int) total];
      int at = 0;
      for (Map.Entry<String, Tensor[]> e : pairs.entrySet()) {
        int layer = Integer.parseInt(e.getKey().substring(0, e.getKey().indexOf('.')));
        at = add(weightsFile, config, layers.get(layer), module(e.getKey()), e.getValue(), rank, (float) scaling, values, at);
      }
    }
    return new LoraAdapter(source.name(), source.dir(), rank, scaling, layers.stream().map(Map::copyOf).toList());
  }

  private static void refuseUnsupported(Path file, JsonNode root) {
    String type = root.path("peft_type").asText("LORA");
    if (!type.equals("LORA")) {
      throw new ModelFormatException(file + ": field 'peft_type' is " + type + "; only LORA adapters are applied");
    }
    if (root.path("use_dora").asBoolean(false)) {
      throw new ModelFormatException(file + ": field 'use_dora' is true; DoRA adapters are not applied, only LoRA");
    }
    if (!root.path("bias").asText("none").equals("none")) {
      throw new ModelFormatException(file + ": field 'bias' is " + root.path("bias") + "; only adapters that train no bias (\"none\") are applied");
    }
    if (root.path("fan_in_fan_out").asBoolean(false)) {
      throw new ModelFormatException(file + ": field 'fan_in_fan_out' is true (Conv1D layers, GPT-2's); these models' projections are nn.Linear");
    }
    for (String field : List.of("modules_to_save", "rank_pattern", "alpha_pattern")) {
      JsonNode n = root.path(field);
      if (!n.isMissingNode() && !n.isNull() && !n.isEmpty()) {
        throw new ModelFormatException(file + ": field '" + field + "' is set (" + n + "); "
            + (field.equals("modules_to_save") ? "fully trained extra modules are not applied" : "one rank and alpha for every module are applied"));
      }
    }
  }

  /** The module of a "layer.module" key. */
  private static String module(String key) {
    return key.substring(key.indexOf('.') + 1);
  }

  /** Checks one projection's A and B against the model; returns how many values its deltas take. */
  private static long check(Path file, ModelConfig c, String module, Tensor[] pair, int rank) {
    if (pair[0] == null || pair[1] == null) {
      throw new ModelFormatException(file + ": " + (pair[0] == null ? pair[1].name() : pair[0].name()) + " has no "
          + (pair[0] == null ? "lora_A" : "lora_B") + " beside it");
    }
    List<Target> targets = MODULES.get(module);
    int in = targets.getFirst().inputs(c);
    int out = targets.stream().mapToInt(t -> t.outputs(c)).sum();
    expectShape(file, pair[0], rank, in, module, rank);
    expectShape(file, pair[1], out, rank, module, rank);
    return (long) rank * (in + out);
  }

  /**
   * Adds one projection's delta (or deltas, for a fused projection: they share A), its values
   * written into {@code values} from {@code at}; returns where the next one's go.
   */
  private static int add(Path file, ModelConfig c, Map<Target, Delta> layer, String module, Tensor[] pair, int rank, float scaling,
      float[] values, int at) {
    List<Target> targets = MODULES.get(module);
    int in = targets.getFirst().inputs(c);
    int aAt = at;
    for (int i = 0; i < rank * in; i++) {
      values[at++] = pair[0].get(i);
    }
    int row = 0;
    for (Target target : targets) {
      if (layer.containsKey(target)) {
        throw new ModelFormatException(file + ": " + pair[1].name() + " changes a projection another tensor of the adapter already changes");
      }
      int part = target.outputs(c);
      for (int o = 0; o < part; o++) { // B's rows [row, row + part), scaled, stored by column
        for (int k = 0; k < rank; k++) {
          values[at + k * part + o] = pair[1].get((long) (row + o) * rank + k) * scaling;
        }
      }
      layer.put(target, new Delta(values, aAt, at, rank, in, part));
      at += part * rank;
      row += part;
    }
    return at;
  }

  private static void expectShape(Path file, Tensor t, int rows, int cols, String module, int rank) {
    if (t.shape().length != 2 || t.shape()[0] != rows || t.shape()[1] != cols) {
      throw new ModelFormatException(file + ": " + t.name() + " has shape " + t.shapeString() + ", expected [" + rows + ", " + cols
          + "] for this model's " + module + " at adapter_config.json's r = " + rank + " (an adapter for another model?)");
    }
  }



  private static JsonNode readJson(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new ModelFormatException(file + ": file does not exist (a PEFT LoRA adapter's directory holds adapter_config.json and adapter_model.safetensors)");
    }
    try {
      JsonNode root = new ObjectMapper().readTree(file.toFile());
      if (root == null || !root.isObject()) {
        throw new ModelFormatException(file + ": not a JSON object");
      }
      return root;
    } catch (IOException e) {
      throw new ModelFormatException(file + ": not valid JSON: " + e.getMessage());
    }
  }

  private static int intField(Path file, JsonNode root, String field, int absent) {
    JsonNode n = root.path(field);
    if (n.isMissingNode()) {
      return absent;
    }
    if (!n.canConvertToInt() || !n.isIntegralNumber()) {
      throw new ModelFormatException(file + ": field '" + field + "' must be an integer, not " + n);
    }
    return n.intValue();
  }
}
