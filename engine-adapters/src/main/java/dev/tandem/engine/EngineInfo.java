package dev.tandem.engine;

import java.util.Set;

/**
 * What an engine serves: model name and limits, KV layout (bytes per token and the cache's element
 * type: "f32", "bf16", "f16", or "" for an engine that holds no real KV), and the request features
 * it honours (anything else is refused by the frontend with a 400, never silently ignored).
 */
public record EngineInfo(
    String engineName,
    String modelName,
    int blockSize,
    int totalKvBlocks,
    int vocabSize,
    int maxContextLength,
    long kvBytesPerToken,
    String kvCacheDtype,
    Set<Feature> features,
    int[] eosTokenIds,
    Batching batching) {

  /** How the engine batches: at most {@code maxNumSeqs} requests and {@code maxBatchedTokens} tokens a step. */
  public record Batching(int maxNumSeqs, int maxBatchedTokens) {}

  public EngineInfo {
    features = Set.copyOf(features);
    eosTokenIds = eosTokenIds.clone();
  }

  /** This description with {@code feature} honoured too. */
  public EngineInfo withFeature(Feature feature) {
    var more = new java.util.HashSet<>(features);
    more.add(feature);
    return new EngineInfo(engineName, modelName, blockSize, totalKvBlocks, vocabSize, maxContextLength, kvBytesPerToken, kvCacheDtype,
        more, eosTokenIds, batching);
  }

  /** Request features an engine may or may not honour. */
  public enum Feature {
    TEMPERATURE,
    TOP_P,
    TOP_K,
    MIN_P,
    SEED,
    PRESENCE_PENALTY,
    FREQUENCY_PENALTY,
    REPETITION_PENALTY,
    LOGPROBS,
    STOP_TOKEN_IDS,
    /** vLLM's {@code min_tokens}: no stop token or end-of-sequence drawn before that many output tokens. */
    MIN_TOKENS,
    /** vLLM's {@code priority}: the worker schedules by it ({@code --scheduling-policy priority}). */
    PRIORITY,
    LOGIT_BIAS,
    /** vLLM's {@code allowed_token_ids}: nothing else is drawn. */
    ALLOWED_TOKEN_IDS,
    /** vLLM's {@code bad_words}: no output ends with one of them. */
    BAD_WORDS,
    /** vLLM's {@code cache_salt}: only requests with the same salt share cached blocks. */
    CACHE_SALT,
    /** Constrained decoding: JSON schema outputs and forced tool calls. */
    STRUCTURED_OUTPUTS,
    /** A bound on a reasoning model's reasoning ({@code thinking_token_budget}): its closing tag forced at the budget. */
    THINKING_BUDGET,
    /** The prompt's embedding on the first output ({@code GenerationRequest.embed}): OpenAI's embeddings endpoint. */
    EMBEDDINGS,
    /** Embeddings truncated to OpenAI's {@code dimensions}: the model was trained for it (Matryoshka). */
    MATRYOSHKA,
    /**
     * The model is served as a cross-encoder (a reranker read through two tokens' logits, vLLM's
     * {@code classifier_from_token}): the first output of a request with {@code embed} carries one
     * value, its relevance logit, instead of the hidden state; no embeddings are served.
     */
    CROSS_ENCODER,
    /**
     * The model has no language-model head (a checkpoint without {@code lm_head.weight} whose
     * embeddings are not tied, as gte-Qwen2 and e5-mistral ship): only requests with {@code embed}
     * are served; the frontend refuses generation.
     */
    POOLING_ONLY,
    /**
     * The model is a bidirectional encoder (BERT-style, {@code engine/encoder}): it pools an input
     * whole and draws no token after it, so an input may take the whole context window; with
     * {@link #POOLING_ONLY} beside it.
     */
    ENCODER,
    /**
     * The model is a sequence classifier (its checkpoint's score head): the first output of a
     * request with {@code embed} carries its label logits, which the model card's labels name;
     * vLLM's {@code /classify}.
     */
    CLASSIFY;

    /** The name used on the wire and in error messages. */
    public String wireName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }
}
