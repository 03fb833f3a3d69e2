package dev.tandem.cli;

import dev.tandem.engine.Engine;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.engine.sched.SpeculativeConfig;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Which engine a worker runs and its settings, shared by {@code serve} and {@code worker}. */
final class EngineOptions {
  @Option(
      names = "--engine",
      defaultValue = "${env:TANDEM_ENGINE:-builtin}",
      description = "builtin (the Java transformer engine) or mocker (no model, a timing model; for router and load tests). Default ${DEFAULT-VALUE}.")
  String engine;

  @Option(
      names = "--model",
      defaultValue = "${env:TANDEM_MODEL}",
      description = "Hugging Face model directory for the builtin engine (env TANDEM_MODEL; default: a tiny generated Qwen3-shaped model, created on first use under ~/.cache/tandem).")
  Path model;

  @Option(
      names = {"--model-name", "--served-model-name"},
      defaultValue = "${env:TANDEM_MODEL_NAME}",
      description = "Model name clients use (env TANDEM_MODEL_NAME; default: the model directory's name, or " + MockerConfig.DEFAULT_MODEL_NAME + " for the mocker).")
  String modelName;

  @Option(names = "--compute", defaultValue = "${env:TANDEM_COMPUTE:-auto}", description = "Compute backend of the builtin engine: auto (cuda where a CUDA device initialises, else cpu), cuda (NVIDIA GPU through JCuda), cpu (Vector API) or scalar (reference). Default ${DEFAULT-VALUE}.")
  String compute;

  @Option(names = "--compute-threads", defaultValue = "${env:TANDEM_COMPUTE_THREADS:-0}", description = "Compute threads (0: all cores; default ${DEFAULT-VALUE}).")
  int computeThreads;

  @Option(names = "--kv-cache-memory", defaultValue = "${env:TANDEM_KV_CACHE_MEMORY:-1g}", description = "Memory for the builtin engine's KV cache, e.g. 512m, 4g (default ${DEFAULT-VALUE}); mapped at start, resident as blocks first fill.")
  String kvCacheMemory;

  @Option(
      names = "--kv-cache-dtype",
      defaultValue = "${env:TANDEM_KV_CACHE_DTYPE:-auto}",
      description = "Element type of the builtin engine's KV cache: auto (the model's torch_dtype), f32, bf16 or f16. 16-bit entries hold twice the tokens in --kv-cache-memory and halve every KV transfer; prefill and decode workers must use the same one (default ${DEFAULT-VALUE}).")
  String kvCacheDtype;

  @Option(
      names = {"--quantization", "-q"},
      defaultValue = "${env:TANDEM_QUANTIZATION:-none}",
      description = "Quantize the builtin engine's weights at load: none, q8_0 (llama.cpp's Q8_0: int8 with an f16 scale per 32 values, about half of bf16's bytes, so batch-1 decode reads half as much) or q4_0 (llama.cpp's Q4_0: 4 bits with an f16 scale per 32 values, about a quarter of bf16's bytes, less accurate; the embedding and LM head stay q8_0). CPU only (default ${DEFAULT-VALUE}).")
  String quantization;

  @Option(
      names = "--speculative-config",
      defaultValue = "${env:TANDEM_SPECULATIVE_CONFIG}",
      description = "Speculative decoding as vLLM configures it, in JSON: {\"method\": \"ngram\", \"num_speculative_tokens\": 4, "
          + "\"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2} proposes the tokens that followed the latest earlier occurrence of "
          + "the last 4..2 tokens and verifies them in one pass; output is distributed as without it. Only \"ngram\" (env "
          + "TANDEM_SPECULATIVE_CONFIG; default: off).")
  String speculativeConfig;

  @Option(
      names = "--hf-overrides",
      defaultValue = "${env:TANDEM_HF_OVERRIDES}",
      description = "vLLM's overrides of the model's config, in JSON; Tandem takes those that serve a causal model as a two-way "
          + "cross-encoder for /score and /rerank, as vLLM serves Qwen3-Reranker: {\"architectures\": [\"Qwen3ForSequenceClassification\"], "
          + "\"classifier_from_token\": [\"no\", \"yes\"], \"is_original_qwen3_reranker\": true} (a pair's score: the sigmoid of "
          + "the second token's logit less the first's). Any other key is refused (env TANDEM_HF_OVERRIDES; default: none).")
  String hfOverrides;

  @Option(
      names = "--lora-modules",
      arity = "1..*",
      defaultValue = "${env:TANDEM_LORA_MODULES}",
      description = "LoRA adapters requests may name as their model, as vLLM takes them: name=path (a PEFT adapter's directory: "
          + "adapter_config.json, adapter_model.safetensors) or {\"name\": ..., \"path\": ...}, several separated by spaces. "
          + "Builtin engine on the CPU (env TANDEM_LORA_MODULES; default: none).")
  java.util.List<String> loraModules;

  @Option(
      names = "--max-lora-rank",
      defaultValue = "${env:TANDEM_MAX_LORA_RANK:-" + BuiltinConfig.DEFAULT_MAX_LORA_RANK + "}",
      description = "The highest rank r an adapter of --lora-modules may have; a higher one is refused at start-up (default ${DEFAULT-VALUE}).")
  int maxLoraRank;

  @Option(
      names = "--enable-lora",
      description = "Accepted for vLLM's command lines: adapters are served when --lora-modules names them or when loaded while serving "
          + "(--allow-runtime-lora-updating); with neither it is refused.")
  boolean enableLora;

  @Option(
      names = "--tokenizer",
      defaultValue = "${env:TANDEM_TOKENIZER}",
      description = "Mocker: Hugging Face model directory whose tokenizer.json and tokenizer_config.json to serve (env TANDEM_TOKENIZER; default: the bundled Qwen3 tokenizer).")
  Path tokenizer;

  @Option(
      names = "--speedup-ratio",
      defaultValue = "${env:TANDEM_SPEEDUP_RATIO:-1.0}",
      description = "Mocker timing divided by this; 0 means no delay at all (env TANDEM_SPEEDUP_RATIO; default ${DEFAULT-VALUE}).")
  double speedupRatio;

  @Option(names = "--kv-blocks", defaultValue = "${env:TANDEM_KV_BLOCKS:-16384}", description = "Mocker: KV blocks per worker (default ${DEFAULT-VALUE}).")
  int kvBlocks;

  @Option(names = "--block-size", defaultValue = "${env:TANDEM_BLOCK_SIZE:-16}", description = "Tokens per KV block (default ${DEFAULT-VALUE}).")
  int blockSize;

  @Option(names = "--max-num-seqs", defaultValue = "${env:TANDEM_MAX_NUM_SEQS}", description = "Most sequences in one batch (default: 256 mocker, 64 builtin).")
  Integer maxNumSeqs;

  @Option(names = "--max-batched-tokens", defaultValue = "${env:TANDEM_MAX_BATCHED_TOKENS}", description = "Token budget of one engine step, i.e. the prefill chunk (default: 8192 mocker, 512 builtin).")
  Integer maxBatchedTokens;

  @Option(names = "--scheduling-policy", defaultValue = "${env:TANDEM_SCHEDULING_POLICY:-fcfs}",
      description = "How waiting requests are admitted: fcfs (first come, first served) or priority (vLLM's: a request's lower `priority` first, then arrival; the preempted one is the last in that order).")
  String schedulingPolicy;

  @Option(names = "--no-chunked-prefill", description = "Prefill each prompt in one step.")
  boolean noChunkedPrefill;

  @Option(names = "--max-context-length", defaultValue = "${env:TANDEM_MAX_CONTEXT_LENGTH}", description = "Context window in tokens (default: 32768 mocker, the model's max_position_embeddings builtin).")
  Integer maxContextLength;

  boolean isMocker() {
    return switch (engine) {
      case "mocker" -> true;
      case "builtin" -> false;
      default -> throw new IllegalArgumentException("unknown engine '" + engine + "'; known: builtin, mocker");
    };
  }

  MockerConfig mockerConfig() {
    return MockerConfig.defaults()
        .withModelName(modelName != null ? modelName : MockerConfig.DEFAULT_MODEL_NAME)
        .withPool(kvBlocks, blockSize)
        .withBatching(
            maxNumSeqs != null ? maxNumSeqs : 256,
            maxBatchedTokens != null ? maxBatchedTokens : 8192,
            !noChunkedPrefill)
        .withMaxContextLength(maxContextLength != null ? maxContextLength : 32_768)
        .withTiming(new TimingModel(speedupRatio));
  }

  /**
   * The builtin engine's settings; resolves (and on first use creates) the default model. {@code
   * loraUpdates}: adapters may be loaded while serving ({@code --allow-runtime-lora-updating}).
   */
  BuiltinConfig builtinConfig(boolean loraUpdates) {
    dev.tandem.engine.model.DType kv = kvCacheDtype(); // bad values fail before any model is made
    dev.tandem.engine.model.DType weights = dev.tandem.engine.model.DType.fromQuantizationName(quantization);
    SpeculativeConfig speculative = SpeculativeConfig.parse(speculativeConfig, "--speculative-config");
    Path dir = model != null ? model : DefaultModel.ensure();
    dev.tandem.engine.model.ClassifierConfig.parse(hfOverrides, dir); // refused naming the field before the weights load
    return new BuiltinConfig(
        dir,
        modelName,
        compute,
        computeThreads,
        blockSize,
        parseBytes(kvCacheMemory),
        maxNumSeqs != null ? maxNumSeqs : 64,
        maxBatchedTokens != null ? maxBatchedTokens : 512,
        !noChunkedPrefill,
        maxContextLength != null ? maxContextLength : 0,
        kv,
        weights,
        speculative,
        loraSources(loraUpdates),
        maxLoraRank,
        hfOverrides);
  }

  /** {@code --lora-modules}: each entry {@code name=path} or vLLM's JSON form, refused naming the flag where malformed. */
  java.util.List<dev.tandem.engine.model.LoraAdapter.Source> loraSources(boolean loraUpdates) {
    if (enableLora && !loraUpdates && (loraModules == null || loraModules.isEmpty())) {
      throw new IllegalArgumentException("--enable-lora without --lora-modules: no adapter would be served; name them with "
          + "--lora-modules name=path, or load them while serving with --allow-runtime-lora-updating (vLLM's /v1/load_lora_adapter)");
    }
    java.util.List<dev.tandem.engine.model.LoraAdapter.Source> sources = new java.util.ArrayList<>();
    java.util.List<String> entries = new java.util.ArrayList<>();
    for (String arg : loraModules == null ? java.util.List.<String>of() : loraModules) {
      // One JSON object per argument; name=path entries may also come several to one (the environment variable's form).
      entries.addAll(arg.strip().startsWith("{") ? java.util.List.of(arg.strip()) : java.util.List.of(arg.strip().split("\\s+")));
    }
    for (String entry : entries) {
      if (entry.isBlank()) {
        continue;
      }
      String name;
      String path;
      if (entry.startsWith("{")) {
        com.fasterxml.jackson.databind.JsonNode n;
        try {
          n = new com.fasterxml.jackson.databind.ObjectMapper().readTree(entry);
        } catch (java.io.IOException e) {
          throw new IllegalArgumentException("--lora-modules: '" + entry + "' is not valid JSON: " + e.getMessage());
        }
        name = n.path("name").asText("");
        path = n.path("path").asText("");
      } else {
        int eq = entry.indexOf('=');
        name = eq < 0 ? "" : entry.substring(0, eq);
        path = eq < 0 ? "" : entry.substring(eq + 1);
      }
      if (name.isEmpty() || path.isEmpty()) {
        throw new IllegalArgumentException("--lora-modules: '" + entry + "' names no adapter; give name=path or {\"name\": ..., \"path\": ...}");
      }
      Path dir = Path.of(path);
      if (!java.nio.file.Files.isDirectory(dir)) {
        throw new IllegalArgumentException("--lora-modules: adapter '" + name + "': " + path + " is not a directory (a PEFT adapter's, "
            + "holding adapter_config.json and adapter_model.safetensors)");
      }
      sources.add(new dev.tandem.engine.model.LoraAdapter.Source(name, dir));
    }
    return sources;
  }

  /** {@code --kv-cache-dtype}: null for auto. */
  private dev.tandem.engine.model.DType kvCacheDtype() {
    return kvCacheDtype.equals("auto") ? null : dev.tandem.engine.model.DType.fromShortName(kvCacheDtype);
  }

  /** Everything one worker needs: its engine factory and the files of its model card; {@code loraUpdates} as {@link #builtinConfig}. */
  WorkerEngines resolve(boolean loraUpdates) {
    checkNumbers();
    if (isMocker()) {
      if (!kvCacheDtype.equals("auto")) {
        throw new IllegalArgumentException("--kv-cache-dtype is for the builtin engine; the mocker stores no KV (it reports "
            + MockerConfig.defaults().kvBytesPerToken() + " bytes per token, Qwen3-0.6B at bf16)");
      }
      if (!quantization.equals("none")) {
        throw new IllegalArgumentException("--quantization is for the builtin engine; the mocker has no weights");
      }
      if (speculativeConfig != null && !speculativeConfig.isBlank()) {
        throw new IllegalArgumentException("--speculative-config is for the builtin engine; the mocker has no model to verify proposals");
      }
      if (hfOverrides != null && !hfOverrides.isBlank()) {
        throw new IllegalArgumentException("--hf-overrides is for the builtin engine; the mocker has no model to score with");
      }
      if ((loraModules != null && loraModules.stream().anyMatch(m -> !m.isBlank())) || enableLora) {
        throw new IllegalArgumentException("--lora-modules is for the builtin engine; the mocker has no weights to adapt");
      }
      MockerConfig config = mockerConfig();
      ModelFiles files = tokenizer == null ? ModelFiles.bundledQwen3() : ModelFiles.fromDirectory(tokenizer);
      return new WorkerEngines(() -> scheduled(new MockerEngine(config)), files, config.blockSize());
    }
    if (tokenizer != null) {
      throw new IllegalArgumentException("--tokenizer is for the mocker; the builtin engine serves the tokenizer in --model");
    }
    BuiltinConfig config = builtinConfig(loraUpdates);
    if (dev.tandem.engine.encoder.EncoderConfig.isEncoder(config.modelDir())) {
      return encoder(config);
    }
    return new WorkerEngines(() -> scheduled(BuiltinEngine.open(config)), ModelFiles.fromDirectory(config.modelDir()), config.blockSize());
  }

  /**
   * A BERT-style encoder's engine (embeddings, /score and /rerank only); the decoder's options
   * that have no meaning for it are refused naming the flag.
   */
  private WorkerEngines encoder(BuiltinConfig config) {
    String why = " is for decoder models; " + config.modelDir() + " is an encoder (config.json's model_type), which keeps no KV"
        + " and generates nothing";
    if (config.kvCacheDtype() != null) {
      throw new IllegalArgumentException("--kv-cache-dtype" + why);
    }
    if (config.quantization() != null) {
      throw new IllegalArgumentException("--quantization" + why);
    }
    if (config.speculative() != SpeculativeConfig.OFF) {
      throw new IllegalArgumentException("--speculative-config" + why);
    }
    if (!config.loraModules().isEmpty() || enableLora) {
      throw new IllegalArgumentException("--lora-modules" + why);
    }
    if (hfOverrides != null && !hfOverrides.isBlank()) {
      throw new IllegalArgumentException("--hf-overrides" + why);
    }
    int tokens = maxBatchedTokens != null ? maxBatchedTokens : 8192;
    boolean priority = priorityScheduling();
    return new WorkerEngines(() -> {
      var engine = dev.tandem.engine.encoder.EncoderEngine.open(config.modelDir(), config.modelName(), config.compute(), config.threads(),
          config.maxNumSeqs(), tokens);
      if (priority) {
        engine.scheduleByPriority();
      }
      return engine;
    }, ModelFiles.fromDirectory(config.modelDir()), config.blockSize());
  }

  /** The engine, scheduling as {@code --scheduling-policy} says. */
  private <E extends dev.tandem.engine.sched.SchedulingEngine> E scheduled(E engine) {
    if (priorityScheduling()) {
      engine.scheduleByPriority();
    }
    return engine;
  }

  private boolean priorityScheduling() {
    return switch (schedulingPolicy) {
      case "fcfs" -> false;
      case "priority" -> true;
      default -> throw new IllegalArgumentException("--scheduling-policy: expected fcfs or priority, was '" + schedulingPolicy + "'");
    };
  }

  /** Refuses a count or ratio out of its range, naming the flag (before any engine or model is made). */
  private void checkNumbers() {
    priorityScheduling(); // a bad policy name fails here, before any engine is made
    Flags.atLeast("--block-size", blockSize, 1);
    Flags.atLeast("--kv-blocks", kvBlocks, 1);
    Flags.atLeast("--compute-threads", computeThreads, 0);
    if (maxNumSeqs != null) {
      Flags.atLeast("--max-num-seqs", maxNumSeqs, 1);
    }
    if (maxBatchedTokens != null) {
      Flags.atLeast("--max-batched-tokens", maxBatchedTokens, 1);
    }
    if (maxContextLength != null) {
      Flags.atLeast("--max-context-length", maxContextLength, 1);
    }
    Flags.nonNegative("--speedup-ratio", speedupRatio);
    Flags.atLeast("--max-lora-rank", maxLoraRank, 1);
  }

  /** How to make a worker's engine, the tokenizer files it serves, and its KV block size. */
  record WorkerEngines(java.util.function.Supplier<Engine> factory, ModelFiles modelFiles, int blockSize) {}

  static long parseBytes(String s) {
    String t = s.trim().toLowerCase(java.util.Locale.ROOT);
    long unit = 1;
    char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
    switch (last) {
      case 'k' -> unit = 1L << 10;
      case 'm' -> unit = 1L << 20;
      case 'g' -> unit = 1L << 30;
      default -> {}
    }
    try {
      long n = Long.parseLong(unit == 1 ? t : t.substring(0, t.length() - 1));
      if (n <= 0) {
        throw new NumberFormatException();
      }
      return n * unit;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--kv-cache-memory must be a size like 512m or 4g, was " + s);
    }
  }
}
