package dev.tandem.engine.modeltools;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.model.ModelConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Writes a LoRA adapter for a model directory in PEFT's format ({@code adapter_config.json},
 * {@code adapter_model.safetensors} with PEFT's tensor names) with seeded random A and B. PEFT
 * starts B at zero, which would change nothing; here both are drawn from N(0, σ²), σ = the model's
 * {@code initializer_range}, so that the adapter changes the output and tests see it. The same
 * (model, rank, alpha, targets, seed, dtype) always gives the same bytes.
 */
public final class LoraGenerator {
  /** Every projection, as Llama-style models name them. */
  public static final List<String> ALL_TARGETS = List.of("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj");

  private LoraGenerator() {}

  /**
   * Writes the adapter into {@code out} (created if needed) for the model in {@code modelDir}.
   * {@code targets}: PEFT's module names; for a model with fused projections (Phi-3) q/k/v_proj
   * become its {@code qkv_proj} and gate/up_proj its {@code gate_up_proj}.
   */
  public static void write(Path modelDir, Path out, int rank, double alpha, boolean rslora, List<String> targets, long seed, DType dtype)
      throws IOException {
    if (rank < 1) {
      throw new IllegalArgumentException("--rank must be at least 1, was " + rank);
    }
    ModelConfig c = ModelConfig.read(modelDir);
    ObjectMapper json = new ObjectMapper();
    double std = json.readTree(modelDir.resolve("config.json").toFile()).path("initializer_range").asDouble(0.02);
    List<String> modules = targets.stream().map(t -> fused(c, t)).distinct().toList();
    Files.createDirectories(out);
    ObjectNode config = json.createObjectNode();
    config.put("peft_type", "LORA");
    config.put("task_type", "CAUSAL_LM");
    config.put("base_model_name_or_path", modelDir.toAbsolutePath().toString());
    config.put("r", rank);
    config.put("lora_alpha", alpha);
    config.put("lora_dropout", 0.0);
    config.put("bias", "none");
    config.put("use_rslora", rslora);
    config.put("use_dora", false);
    config.put("fan_in_fan_out", false);
    config.putNull("modules_to_save");
    modules.forEach(config.withArray("target_modules")::add);
    json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("adapter_config.json").toFile(), config);

    SafetensorsWriter w = new SafetensorsWriter();
    for (int l = 0; l < c.numLayers(); l++) {
      for (String m : modules) {
        String p = "base_model.model.model.layers." + l + "." + (isAttention(m) ? "self_attn." : "mlp.") + m;
        w.add(p + ".lora_A.weight", dtype, new long[] {rank, inputs(c, m)}, normal(seed, p + "A", std));
        w.add(p + ".lora_B.weight", dtype, new long[] {outputs(c, m), rank}, normal(seed, p + "B", std));
      }
    }
    w.write(out.resolve("adapter_model.safetensors"));
  }

  private static boolean isAttention(String module) {
    return switch (LoraAdapter.MODULES.get(module).getFirst()) {
      case Q, K, V, O -> true;
      case GATE, UP, DOWN -> false;
    };
  }

  /** The module's name in the model: fused models name q/k/v and gate/up as one. */
  private static String fused(ModelConfig c, String module) {
    if (!ALL_TARGETS.contains(module)) {
      throw new IllegalArgumentException("--targets: unknown module '" + module + "'; known: " + ALL_TARGETS);
    }
    if (!c.fusedProjections()) {
      return module;
    }
    return switch (module) {
      case "q_proj", "k_proj", "v_proj" -> "qkv_proj";
      case "gate_proj", "up_proj" -> "gate_up_proj";
      default -> module;
    };
  }

  private static int inputs(ModelConfig c, String module) {
    return LoraAdapter.MODULES.get(module).getFirst().inputs(c);
  }

  private static int outputs(ModelConfig c, String module) {
    return LoraAdapter.MODULES.get(module).stream().mapToInt(t -> t.outputs(c)).sum();
  }

  private static SafetensorsWriter.Values normal(long seed, String tensor, double std) {
    SplittableRandom r = new SplittableRandom(seed ^ tensor.hashCode() * 0x9E3779B97F4A7C15L);
    return () -> (float) (r.nextGaussian() * std);
  }
}
