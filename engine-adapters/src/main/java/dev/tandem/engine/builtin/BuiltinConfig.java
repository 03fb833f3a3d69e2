package dev.tandem.engine.builtin;

import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.sched.SpeculativeConfig;
import java.nio.file.Path;
import java.util.List;

/**
 * How to run a model with the built-in engine.
 *
 * @param modelDir a Hugging Face model directory (config.json, safetensors, tokenizer)
 * @param modelName the name clients use; null: the directory's name
 * @param compute compute backend name ("cpu", "scalar") or "auto"
 * @param threads compute threads (0: all cores)
 * @param kvCacheBytes memory for the paged KV cache; the block count follows from it
 * @param maxContextLength 0: the model's max_position_embeddings
 * @param kvCacheDtype the KV cache's element type; null ("auto"): the model's {@code torch_dtype}
 * @param quantization {@link DType#Q8_0} or {@link DType#Q4_0}: the weights quantized at load; null: as stored
 * @param speculative speculative decoding by n-gram lookup; {@link SpeculativeConfig#OFF}: none
 * @param loraModules LoRA adapters a request may name ({@code --lora-modules}); empty: none
 * @param maxLoraRank the highest rank an adapter may have ({@code --max-lora-rank})
 * @param hfOverrides vLLM's {@code --hf-overrides} JSON (the keys that serve a model as a cross-encoder, {@link
 *     dev.tandem.engine.model.ClassifierConfig}); null: none
 */
public record BuiltinConfig(
    Path modelDir,
    String modelName,
    String compute,
    int threads,
    int blockSize,
    long kvCacheBytes,
    int maxNumSeqs,
    int maxBatchedTokens,
    boolean chunkedPrefill,
    int maxContextLength,
    DType kvCacheDtype,
    DType quantization,
    SpeculativeConfig speculative,
    List<LoraAdapter.Source> loraModules,
    int maxLoraRank,
    String hfOverrides) {

  public static final long DEFAULT_KV_CACHE_BYTES = 1L << 30;
  /** vLLM's default {@code --max-lora-rank}. */
  public static final int DEFAULT_MAX_LORA_RANK = 16;

  public BuiltinConfig {
    speculative = speculative == null ? SpeculativeConfig.OFF : speculative;
    loraModules = loraModules == null ? List.of() : List.copyOf(loraModules);
    maxLoraRank = maxLoraRank <= 0 ? DEFAULT_MAX_LORA_RANK : maxLoraRank;
  }

  /** Defaults for a model directory: cpu backend on all cores, 1 GiB of KV, 16-token blocks. */
  public static BuiltinConfig of(Path modelDir) {
    return new BuiltinConfig(modelDir, null, "auto", 0, 16, DEFAULT_KV_CACHE_BYTES, 64, 2048, true, 0, null, null, SpeculativeConfig.OFF, List.of(), DEFAULT_MAX_LORA_RANK, null);
  }

  public BuiltinConfig withCompute(String compute, int threads) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  public BuiltinConfig withKvCacheBytes(long kvCacheBytes) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  public BuiltinConfig withBatching(int maxNumSeqs, int maxBatchedTokens, boolean chunkedPrefill) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  public BuiltinConfig withModelName(String modelName) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  public BuiltinConfig withMaxContextLength(int maxContextLength) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  /** vLLM's {@code --hf-overrides} JSON; null: none. */
  public BuiltinConfig withHfOverrides(String hfOverrides) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  /** {@code kvCacheDtype} null: the model's own dtype ({@code --kv-cache-dtype auto}). */
  public BuiltinConfig withKvCacheDtype(DType kvCacheDtype) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  /** {@code quantization} {@link DType#Q8_0} or {@link DType#Q4_0}: quantize the weights at load; null: as stored. */
  public BuiltinConfig withQuantization(DType quantization) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  /** Speculative decoding by n-gram lookup ({@link SpeculativeConfig#OFF}: none). */
  public BuiltinConfig withSpeculative(SpeculativeConfig speculative) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }

  /** LoRA adapters a request may name, each of rank at most {@code maxLoraRank}. */
  public BuiltinConfig withLora(List<LoraAdapter.Source> loraModules, int maxLoraRank) {
    return new BuiltinConfig(modelDir, modelName, compute, threads, blockSize, kvCacheBytes, maxNumSeqs, maxBatchedTokens, chunkedPrefill, maxContextLength, kvCacheDtype, quantization, speculative, loraModules, maxLoraRank, hfOverrides);
  }
}
