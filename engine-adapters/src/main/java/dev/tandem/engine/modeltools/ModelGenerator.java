package dev.tandem.engine.modeltools;

import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.ModelFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes complete Hugging Face model directories with seeded random weights: {@code config.json},
 * {@code model.safetensors} (or shards), {@code generation_config.json}, and the real Qwen3
 * tokenizer. The same (config, seed, dtype) always gives the same bytes. Weights and biases are
 * drawn from N(0, σ²) with σ = config.json's {@code initializer_range} (Hugging Face's default
 * 0.02), norm weights from 1 + N(0, 0.1²) (Gemma's, stored as offsets from 1, from N(0, 0.1²)), so
 * that every parameter matters in tests.
 */
public final class ModelGenerator {
  /** Shapes a user can name instead of writing a config.json. */
  public static final Map<String, String> SHAPES =
      Map.of(
          "tiny", "Qwen3, 2 layers, hidden 64: the model `tandem serve` runs by default",
          "llama-100m", "Llama, 8 layers, hidden 512, ~103M parameters",
          "llama-0.6b", "Llama with Qwen3-0.6B's shape (28 layers, hidden 1024), ~0.6B parameters",
          "qwen3-0.6b", "Qwen3-0.6B's exact shape (../shared/models/qwen3-0.6b/config.json)",
          "gemma3-1b", "Gemma 3 1B's exact shape (26 layers, hidden 1152, 5 sliding layers of 512 to each full one), ~1B parameters",
          "gemma2-2b", "Gemma 2 2B's exact shape (26 layers, hidden 2304, sliding and full layers alternating, capped scores), ~2.6B parameters",
          "phi3-mini", "Phi-3-mini-4k's shape (32 layers, hidden 3072, fused projections, window 2047) with Qwen3's vocabulary, ~4.6B parameters",
          "phi4-mini", "Phi-4-mini's shape (32 layers, hidden 3072, 24 heads of 128 over 8 KV heads, three quarters of each rotated,"
              + " LongRoPE with made-up factors, tied embeddings) with Qwen3's vocabulary, ~3.7B parameters");

  private static final int QWEN3_VOCAB = 151_936;

  private ModelGenerator() {}

  /** The config.json of a named shape. */
  public static ObjectNode shape(String name) {
    return switch (name) {
      // Larger initial weights than HF's 0.02 so that a tiny random model does not just echo its input.
      case "tiny" -> config("Qwen3ForCausalLM", "qwen3", 64, 128, 2, 4, 2, 16, QWEN3_VOCAB, true).put("initializer_range", 0.3);
      case "llama-100m" -> config("LlamaForCausalLM", "llama", 512, 1536, 8, 8, 4, 64, QWEN3_VOCAB, true);
      case "llama-0.6b" -> config("LlamaForCausalLM", "llama", 1024, 3072, 28, 16, 8, 128, QWEN3_VOCAB, true);
      case "qwen3-0.6b" -> config("Qwen3ForCausalLM", "qwen3", 1024, 3072, 28, 16, 8, 128, QWEN3_VOCAB, true);
      case "gemma3-1b" -> gemma3_1b();
      case "gemma2-2b" -> gemma2_2b();
      case "phi3-mini" -> config("Phi3ForCausalLM", "phi3", 3072, 8192, 32, 32, 32, 96, QWEN3_VOCAB, false)
          .put("max_position_embeddings", 4096).put("sliding_window", 2047).put("rope_theta", 10_000.0).put("rms_norm_eps", 1e-5);
      case "phi4-mini" -> phi4Mini();
      default ->
          throw new IllegalArgumentException("unknown model shape '" + name + "'; known: " + SHAPES.keySet());
    };
  }

  /**
   * microsoft/Phi-4-mini-instruct's shape and RoPE (its `sliding_window` of 262,144 reaches past
   * any context); the LongRoPE factors are made up, of the published count (48 each).
   */
  private static ObjectNode phi4Mini() {
    ObjectNode c = config("Phi3ForCausalLM", "phi3", 3072, 8192, 32, 24, 8, 128, QWEN3_VOCAB, true)
        .put("max_position_embeddings", 131_072).put("original_max_position_embeddings", 4096)
        .put("partial_rotary_factor", 0.75).put("sliding_window", 262_144).put("rope_theta", 10_000.0).put("rms_norm_eps", 1e-5);
    ObjectNode rope = c.putObject("rope_scaling").put("type", "longrope");
    for (int i = 0; i < 48; i++) {
      rope.withArray("short_factor").add(1 + i / 100.0);
      rope.withArray("long_factor").add(1 + i);
    }
    return c;
  }

  /** google/gemma-2-2b-it's config.json, its special ids replaced by the bundled tokenizer's. */
  private static ObjectNode gemma2_2b() {
    ObjectNode c = gemma("Gemma2ForCausalLM", "gemma2", 2304, 9216, 26, 8, 4, 256, 256_000);
    c.put("max_position_embeddings", 8192);
    c.put("rope_theta", 10_000.0);
    c.put("query_pre_attn_scalar", 256);
    c.put("sliding_window", 4096);
    c.put("attn_logit_softcapping", 50.0);
    c.put("final_logit_softcapping", 30.0);
    return c;
  }

  /** google/gemma-3-1b-it's config.json, its special ids replaced by the bundled tokenizer's. */
  private static ObjectNode gemma3_1b() {
    ObjectNode c = gemma("Gemma3ForCausalLM", "gemma3_text", 1152, 6912, 26, 4, 1, 256, 262_144);
    c.put("max_position_embeddings", 32_768);
    c.put("query_pre_attn_scalar", 256);
    c.put("sliding_window", 512);
    c.put("sliding_window_pattern", 6);
    c.put("rope_local_base_freq", 10_000.0);
    c.putNull("final_logit_softcapping");
    c.putNull("attn_logit_softcapping");
    return c;
  }

  /** {@link #config} as Gemma writes it: {@code hidden_activation} GELU (tanh), tied embeddings. */
  private static ObjectNode gemma(String architecture, String modelType, int hidden, int intermediate, int layers, int heads, int kvHeads,
      int headDim, int vocab) {
    ObjectNode c = config(architecture, modelType, hidden, intermediate, layers, heads, kvHeads, headDim, vocab, true);
    c.remove("hidden_act");
    c.put("hidden_activation", "gelu_pytorch_tanh");
    return c;
  }

  /** A config.json for the given architecture and sizes (RoPE θ 1e6, eps 1e-6, Qwen3's special ids). */
  public static ObjectNode config(
      String architecture, String modelType, int hidden, int intermediate, int layers, int heads,
      int kvHeads, int headDim, int vocab, boolean tied) {
    ObjectNode c = new ObjectMapper().createObjectNode();
    c.putArray("architectures").add(architecture);
    c.put("model_type", modelType);
    c.put("hidden_size", hidden);
    c.put("intermediate_size", intermediate);
    c.put("num_hidden_layers", layers);
    c.put("num_attention_heads", heads);
    c.put("num_key_value_heads", kvHeads);
    c.put("head_dim", headDim);
    c.put("vocab_size", vocab);
    c.put("hidden_act", "silu");
    c.put("rms_norm_eps", 1e-6);
    c.put("rope_theta", 1_000_000.0);
    c.put("max_position_embeddings", 40_960);
    c.put("tie_word_embeddings", tied);
    c.put("attention_bias", false);
    c.put("bos_token_id", 151_643);
    c.put("eos_token_id", 151_645);
    c.put("torch_dtype", "bfloat16");
    return c;
  }

  /**
   * Writes a model directory.
   *
   * @param config a config.json tree; {@code torch_dtype} is set to {@code dtype}
   * @param maxShardBytes split weights into shards of about this size with an index (0: one file)
   */
  public static void write(ObjectNode config, DType dtype, long seed, Path out, long maxShardBytes)
      throws IOException {
    config = config.deepCopy();
    config.put("torch_dtype", dtype.torchName());
    ModelConfig mc = ModelConfig.parse(out.resolve("config.json").toString(), config);
    Files.createDirectories(out);
    ObjectMapper json = new ObjectMapper();
    json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("config.json").toFile(), config);
    ObjectNode gen = json.createObjectNode();
    gen.put("bos_token_id", config.path("bos_token_id").asInt(151_643));
    gen.set("eos_token_id", config.path("eos_token_id"));
    gen.put("do_sample", false);
    json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("generation_config.json").toFile(), gen);
    ModelFiles tokenizer = ModelFiles.bundledQwen3();
    Files.write(out.resolve("tokenizer.json"), tokenizer.tokenizerJson());
    Files.write(out.resolve("tokenizer_config.json"), tokenizer.tokenizerConfigJson());
    double std = config.path("initializer_range").asDouble(0.02);
    boolean multimodal = config.path("architectures").path(0).asText().equals(ModelConfig.GEMMA3_MULTIMODAL);
    new WeightLayout(mc, dtype, seed, std, multimodal).write(out, maxShardBytes);
  }

  /** Same-named tensors in the same order as Hugging Face's checkpoints, each from its own stream. */
  /**
   * {@code multimodal}: Gemma 3's multimodal checkpoint as published, the text model's tensors under
   * {@code language_model.} (the same values as the causal LM's of that config and seed) beside a
   * stand-in for the vision tower, which the engine does not read.
   */
  private record WeightLayout(ModelConfig c, DType dtype, long seed, double std, boolean multimodal) {
    void write(Path out, long maxShardBytes) throws IOException {
      ShardedWriter w = new ShardedWriter(out, maxShardBytes, multimodal ? "language_model." : "");
      if (multimodal) {
        w.add("vision_tower.vision_model.post_layernorm.weight", dtype, normal("vision", std), 16);
        w.add("multi_modal_projector.mm_input_projection_weight", dtype, normal("projector", std), 16, c.hiddenSize());
      }
      int h = c.hiddenSize();
      boolean gemma = c.sandwichNorms();
      w.add("model.embed_tokens.weight", dtype, normal("embed", std), c.vocabSize(), h);
      for (int l = 0; l < c.numLayers(); l++) {
        String p = "model.layers." + l + ".";
        w.add(p + "input_layernorm.weight", dtype, ones(p + "in"), h);
        if (c.fusedProjections()) {
          w.add(p + "self_attn.qkv_proj.weight", dtype, normal(p + "qkv", std), c.qDim() + 2 * c.kvDim(), h);
        } else {
          w.add(p + "self_attn.q_proj.weight", dtype, normal(p + "q", std), c.qDim(), h);
          w.add(p + "self_attn.k_proj.weight", dtype, normal(p + "k", std), c.kvDim(), h);
          w.add(p + "self_attn.v_proj.weight", dtype, normal(p + "v", std), c.kvDim(), h);
        }
        if (c.qkvBias()) {
          w.add(p + "self_attn.q_proj.bias", dtype, normal(p + "qb", std), c.qDim());
          w.add(p + "self_attn.k_proj.bias", dtype, normal(p + "kb", std), c.kvDim());
          w.add(p + "self_attn.v_proj.bias", dtype, normal(p + "vb", std), c.kvDim());
        }
        if (c.qkNorm()) {
          w.add(p + "self_attn.q_norm.weight", dtype, ones(p + "qn"), c.headDim());
          w.add(p + "self_attn.k_norm.weight", dtype, ones(p + "kn"), c.headDim());
        }
        w.add(p + "self_attn.o_proj.weight", dtype, normal(p + "o", std), h, c.qDim());
        if (c.outputBias()) {
          w.add(p + "self_attn.o_proj.bias", dtype, normal(p + "ob", std), h);
        }
        w.add(p + "post_attention_layernorm.weight", dtype, ones(p + "post"), h);
        if (gemma) {
          w.add(p + "pre_feedforward_layernorm.weight", dtype, ones(p + "preff"), h);
          w.add(p + "post_feedforward_layernorm.weight", dtype, ones(p + "postff"), h);
        }
        if (c.fusedProjections()) {
          w.add(p + "mlp.gate_up_proj.weight", dtype, normal(p + "gateup", std), 2 * c.intermediateSize(), h);
        } else {
          w.add(p + "mlp.gate_proj.weight", dtype, normal(p + "gate", std), c.intermediateSize(), h);
          w.add(p + "mlp.up_proj.weight", dtype, normal(p + "up", std), c.intermediateSize(), h);
        }
        w.add(p + "mlp.down_proj.weight", dtype, normal(p + "down", std), h, c.intermediateSize());
      }
      w.add("model.norm.weight", dtype, ones("norm"), h);
      if (!c.tieWordEmbeddings()) {
        w.add("lm_head.weight", dtype, normal("lm_head", std), c.vocabSize(), h);
      }
      w.finish();
    }

    private SafetensorsWriter.Values normal(String tensor, double std) {
      SplittableRandom r = new SplittableRandom(seed ^ tensor.hashCode() * 0x9E3779B97F4A7C15L);
      return () -> (float) (r.nextGaussian() * std);
    }

    /** A norm's weights near 1 (Gemma's stored as offsets from 1: near 0). */
    private SafetensorsWriter.Values ones(String tensor) {
      SplittableRandom r = new SplittableRandom(seed ^ tensor.hashCode() * 0x9E3779B97F4A7C15L);
      float one = c.unitOffsetNorms() ? 0f : 1f;
      return () -> (float) (one + r.nextGaussian() * 0.1);
    }
  }

  /** Groups tensors into shards of about {@code maxShardBytes} and writes the index when sharded. */
  private static final class ShardedWriter {
    private final Path dir;
    private final long maxShardBytes;
    private final String textPrefix; // before every text-model tensor's name: "" or "language_model."
    private final java.util.List<SafetensorsWriter> shards = new java.util.ArrayList<>();
    private final java.util.Map<String, Integer> shardOf = new java.util.LinkedHashMap<>();
    private long currentBytes;

    ShardedWriter(Path dir, long maxShardBytes, String textPrefix) {
      this.textPrefix = textPrefix;
      this.dir = dir;
      this.maxShardBytes = maxShardBytes;
      shards.add(new SafetensorsWriter());
    }

    void add(String name, DType dtype, SafetensorsWriter.Values values, long... shape) {
      long bytes = dtype.bytes();
      for (long d : shape) {
        bytes *= d;
      }
      if (maxShardBytes > 0 && currentBytes > 0 && currentBytes + bytes > maxShardBytes) {
        shards.add(new SafetensorsWriter());
        currentBytes = 0;
      }
      currentBytes += bytes;
      if (name.startsWith("model.") || name.equals("lm_head.weight")) {
        name = textPrefix + name;
      }
      shards.getLast().add(name, dtype, shape, values);
      shardOf.put(name, shards.size() - 1);
    }

    void finish() throws IOException {
      if (shards.size() == 1) {
        shards.getFirst().write(dir.resolve("model.safetensors"));
        return;
      }
      int n = shards.size();
      ObjectMapper json = new ObjectMapper();
      ObjectNode index = json.createObjectNode();
      index.putObject("metadata");
      ObjectNode map = index.putObject("weight_map");
      for (var e : shardOf.entrySet()) {
        map.put(e.getKey(), shardName(e.getValue(), n));
      }
      for (int i = 0; i < n; i++) {
        shards.get(i).write(dir.resolve(shardName(i, n)));
      }
      json.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("model.safetensors.index.json").toFile(), index);
    }

    private static String shardName(int i, int n) {
      return String.format("model-%05d-of-%05d.safetensors", i + 1, n);
    }
  }
}
