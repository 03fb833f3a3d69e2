package dev.tandem.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
    name = "model",
    mixinStandardHelpOptions = true,
    description = "Model directories: create one with seeded random weights (no downloads needed).",
    subcommands = {ModelCommand.Create.class, ModelCommand.CreateLora.class, ModelCommand.ExportGguf.class})
final class ModelCommand {

  @Command(
      name = "create",
      mixinStandardHelpOptions = true,
      description = {
        "Writes a complete Hugging Face model directory: config.json, safetensors with seeded random weights, and the real Qwen3 tokenizer.",
        "Shapes: tiny (the default model of `tandem serve`), llama-100m, llama-0.6b, qwen3-0.6b."
      })
  static final class Create implements Callable<Integer> {
    static final class Source {
      @Option(names = "--config", description = "A Hugging Face config.json to follow.")
      Path config;

      @Option(names = "--shape", description = "A named shape: tiny, llama-100m, llama-0.6b, qwen3-0.6b, gemma3-1b, gemma2-2b, phi3-mini, phi4-mini.")
      String shape;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Source source;

    @Option(names = "--out", required = true, description = "Directory to write.")
    Path out;

    @Option(names = "--dtype", defaultValue = "bf16", description = "Weight type: bf16, f16 or f32 (default ${DEFAULT-VALUE}).")
    String dtype;

    @Option(names = "--seed", defaultValue = "0", description = "Random seed (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--shard-bytes", defaultValue = "0", description = "Split weights into shards of about this many bytes (default: one file).")
    long shardBytes;

    @Override
    public Integer call() throws Exception {
      ObjectNode config =
          source.config != null
              ? (ObjectNode) new ObjectMapper().readTree(source.config.toFile())
              : ModelGenerator.shape(source.shape);
      DType type = parseDType(dtype);
      if (Files.exists(out.resolve("config.json"))) {
        throw new IllegalArgumentException(out + " already holds a model (config.json); choose another --out");
      }
      ModelGenerator.write(config, type, seed, out, shardBytes);
      ModelConfig written = ModelConfig.read(out);
      System.out.printf(
          Locale.ROOT,
          "wrote %s: %s, %d layers, hidden %d, vocab %d, %s weights%n",
          out, written.architecture().hfName, written.numLayers(), written.hiddenSize(), written.vocabSize(), type);
      return 0;
    }
  }

  @Command(
      name = "create-lora",
      mixinStandardHelpOptions = true,
      description = {
        "Writes a LoRA adapter for a model directory in PEFT's format (adapter_config.json, adapter_model.safetensors), A and B seeded random.",
        "It is for trying --lora-modules without downloads: PEFT starts B at zero, here it is random, so the adapter changes the output."
      })
  static final class CreateLora implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "The base model's directory.")
    Path model;

    @Option(names = "--out", required = true, description = "Directory to write.")
    Path out;

    @Option(names = "--rank", defaultValue = "8", description = "The adapter's rank r (default ${DEFAULT-VALUE}).")
    int rank;

    @Option(names = "--alpha", defaultValue = "16", description = "lora_alpha: the change is scaled by alpha / r (default ${DEFAULT-VALUE}).")
    double alpha;

    @Option(names = "--rslora", description = "Scale by alpha / √r (use_rslora).")
    boolean rslora;

    @Option(names = "--targets", split = ",", defaultValue = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
        description = "Projections to adapt, comma-separated (default ${DEFAULT-VALUE}).")
    java.util.List<String> targets;

    @Option(names = "--dtype", defaultValue = "f32", description = "Tensor type: bf16, f16 or f32 (default ${DEFAULT-VALUE}).")
    String dtype;

    @Option(names = "--seed", defaultValue = "0", description = "Random seed (default ${DEFAULT-VALUE}).")
    long seed;

    @Override
    public Integer call() throws Exception {
      if (Files.exists(out.resolve("adapter_config.json"))) {
        throw new IllegalArgumentException(out + " already holds an adapter (adapter_config.json); choose another --out");
      }
      dev.tandem.engine.modeltools.LoraGenerator.write(model, out, rank, alpha, rslora, targets, seed, parseDType(dtype));
      System.out.printf(Locale.ROOT, "wrote %s: LoRA rank %d, alpha %s, on %s%n", out, rank, alpha, String.join(", ", targets));
      return 0;
    }
  }

  @Command(
      name = "export-gguf",
      mixinStandardHelpOptions = true,
      description = "Writes a model directory (Llama, Phi-3, Gemma 2/3) as a GGUF file for llama.cpp: same weights, same element type, or quantized as the engine quantizes them.")
  static final class ExportGguf implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "Hugging Face model directory (LlamaForCausalLM).")
    Path model;

    @Option(names = "--out", required = true, description = "GGUF file to write.")
    Path out;

    @Option(names = {"--quantization", "-q"}, defaultValue = "none",
        description = "none, q8_0 or q4_0: the matrices as --quantization quantizes them at load (llama.cpp's Q8_0 or Q4_0 blocks; the embedding and LM head Q8_0). Default ${DEFAULT-VALUE}.")
    String quantization;

    @Override
    public Integer call() throws Exception {
      dev.tandem.engine.modeltools.GgufExport.write(model, out, DType.fromQuantizationName(quantization));
      System.out.printf(Locale.ROOT, "wrote %s (%d MB)%n", out, Files.size(out) >> 20);
      return 0;
    }
  }

  static DType parseDType(String s) {
    return switch (s.toLowerCase(Locale.ROOT)) {
      case "bf16", "bfloat16" -> DType.BF16;
      case "f16", "fp16", "float16" -> DType.F16;
      case "f32", "fp32", "float32" -> DType.F32;
      default -> throw new IllegalArgumentException("--dtype must be bf16, f16 or f32, was " + s);
    };
  }
}
