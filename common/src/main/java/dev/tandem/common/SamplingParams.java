package dev.tandem.common;

import java.util.OptionalLong;

/**
 * How to pick each token, as every module sees it (frontend, router, worker, engine). Temperature 0
 * is greedy; {@code seed} makes sampling reproducible; {@code topK} -1 and {@code topP} 1 are off;
 * {@code logprobs} is the number of top alternatives to return with each token, or -1 for none;
 * {@code logitBias} adds to a token's logit before sampling (OpenAI's −100…100; empty: none);
 * {@code promptLogprobs}, when not -1, asks for each prompt token's log-probability (given the
 * tokens before it) and that many top alternatives (completions' {@code echo} with {@code
 * logprobs}); the prompt is then computed in full, not taken from the prefix cache. {@code
 * thinkingBudget} (null: none) bounds a reasoning model's reasoning (vLLM's {@code
 * thinking_token_budget}). {@code allowedTokenIds} (empty: any) are the only tokens that may be
 * drawn (vLLM's {@code allowed_token_ids}; log-probabilities still come from the raw distribution);
 * no output ends with one of {@code badWords} (vLLM's {@code bad_words}, each as its tokens).
 *
 * <p>The defaults live here and nowhere else: {@link #DEFAULTS} is what an OpenAI request that sets
 * nothing gets (temperature 1, no truncation, no penalties).
 */
public record SamplingParams(
    float temperature,
    float topP,
    int topK,
    float minP,
    OptionalLong seed,
    float presencePenalty,
    float frequencyPenalty,
    float repetitionPenalty,
    int logprobs,
    java.util.Map<Integer, Float> logitBias,
    int promptLogprobs,
    ThinkingBudget thinkingBudget,
    java.util.List<Integer> allowedTokenIds,
    java.util.List<java.util.List<Integer>> badWords) {

  /** OpenAI's default temperature. */
  public static final float DEFAULT_TEMPERATURE = 1f;
  /** top_p off. */
  public static final float NO_TOP_P = 1f;
  /** top_k off. */
  public static final int NO_TOP_K = -1;
  /** repetition_penalty off. */
  public static final float NO_REPETITION_PENALTY = 1f;
  /** No log-probabilities. */
  public static final int NO_LOGPROBS = -1;
  /** The most alternatives a request may ask for per token (OpenAI's limit). */
  public static final int MAX_LOGPROBS = 20;

  /** What a request that sets nothing gets. */
  public static final SamplingParams DEFAULTS =
      new SamplingParams(DEFAULT_TEMPERATURE, NO_TOP_P, NO_TOP_K, 0f, OptionalLong.empty(), 0f, 0f, NO_REPETITION_PENALTY, NO_LOGPROBS);

  /** Without logit bias. */
  public SamplingParams(
      float temperature, float topP, int topK, float minP, OptionalLong seed, float presencePenalty, float frequencyPenalty,
      float repetitionPenalty, int logprobs) {
    this(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, java.util.Map.of(),
        NO_LOGPROBS);
  }

  /** Without prompt log-probabilities. */
  public SamplingParams(
      float temperature, float topP, int topK, float minP, OptionalLong seed, float presencePenalty, float frequencyPenalty,
      float repetitionPenalty, int logprobs, java.util.Map<Integer, Float> logitBias) {
    this(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias, NO_LOGPROBS);
  }

  /** Without a thinking budget. */
  public SamplingParams(
      float temperature, float topP, int topK, float minP, OptionalLong seed, float presencePenalty, float frequencyPenalty,
      float repetitionPenalty, int logprobs, java.util.Map<Integer, Float> logitBias, int promptLogprobs) {
    this(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias, promptLogprobs,
        null);
  }

  /** Any token may be drawn. */
  public SamplingParams(
      float temperature, float topP, int topK, float minP, OptionalLong seed, float presencePenalty, float frequencyPenalty,
      float repetitionPenalty, int logprobs, java.util.Map<Integer, Float> logitBias, int promptLogprobs, ThinkingBudget thinkingBudget) {
    this(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias, promptLogprobs,
        thinkingBudget, java.util.List.of(), java.util.List.of());
  }

  public SamplingParams {
    logitBias = logitBias == null ? java.util.Map.of() : java.util.Map.copyOf(logitBias);
    allowedTokenIds = allowedTokenIds == null ? java.util.List.of() : java.util.List.copyOf(allowedTokenIds);
    badWords = badWords == null ? java.util.List.of() : badWords.stream().map(java.util.List::copyOf).toList();
    if (badWords.stream().anyMatch(java.util.List::isEmpty)) {
      throw new IllegalArgumentException("a bad word has no tokens");
    }
    if (topK == 0) {
      topK = NO_TOP_K;
    }
    if (logprobs > MAX_LOGPROBS) {
      logprobs = MAX_LOGPROBS;
    }
    if (promptLogprobs > MAX_LOGPROBS) {
      promptLogprobs = MAX_LOGPROBS;
    }
  }

  /** Greedy decoding with no penalties. */
  public static SamplingParams greedy() {
    return DEFAULTS.withTemperature(0f);
  }

  public boolean isGreedy() {
    return temperature == 0f;
  }

  public SamplingParams withTemperature(float t) {
    return new SamplingParams(t, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias, promptLogprobs, thinkingBudget, allowedTokenIds, badWords);
  }

  public SamplingParams withSeed(OptionalLong s) {
    return new SamplingParams(temperature, topP, topK, minP, s, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias, promptLogprobs, thinkingBudget, allowedTokenIds, badWords);
  }

  public SamplingParams withLogitBias(java.util.Map<Integer, Float> bias) {
    return new SamplingParams(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, bias, promptLogprobs, thinkingBudget, allowedTokenIds, badWords);
  }

  public SamplingParams withPromptLogprobs(int n) {
    return new SamplingParams(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias, n, thinkingBudget, allowedTokenIds, badWords);
  }

  /** These parameters with {@code budget} on the reasoning (null: none). */
  public SamplingParams withThinkingBudget(ThinkingBudget budget) {
    return new SamplingParams(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias,
        promptLogprobs, budget, allowedTokenIds, badWords);
  }

  /** vLLM's {@code allowed_token_ids}: only these may be drawn (empty: any token). */
  public SamplingParams withAllowedTokenIds(java.util.List<Integer> ids) {
    return new SamplingParams(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias,
        promptLogprobs, thinkingBudget, ids, badWords);
  }

  /** vLLM's {@code bad_words}, as token sequences: none is generated whole (empty: none). */
  public SamplingParams withBadWords(java.util.List<java.util.List<Integer>> words) {
    return new SamplingParams(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, logprobs, logitBias,
        promptLogprobs, thinkingBudget, allowedTokenIds, words);
  }

  /**
   * vLLM's {@code bad_words} at an output whose last tokens are {@code output[from, to)}: the
   * tokens that would complete one of them now (a one-token word always; a longer one where the
   * output ends with all of it but its last token).
   */
  public int[] bannedAfter(int[] output, int from, int to) {
    int[] banned = new int[badWords.size()];
    int count = 0;
    for (java.util.List<Integer> word : badWords) {
      int prefix = word.size() - 1;
      boolean ends = to - from >= prefix;
      for (int k = 0; ends && k < prefix; k++) {
        ends = output[to - prefix + k] == word.get(k);
      }
      if (ends) {
        banned[count++] = word.get(prefix);
      }
    }
    return java.util.Arrays.copyOf(banned, count);
  }

  /** Whether only some tokens may be drawn ({@link #allowedTokenIds}). */
  public boolean restrictsTokens() {
    return !allowedTokenIds.isEmpty();
  }

  public boolean wantsPromptLogprobs() {
    return promptLogprobs >= 0;
  }

  public SamplingParams withLogprobs(int n) {
    return new SamplingParams(temperature, topP, topK, minP, seed, presencePenalty, frequencyPenalty, repetitionPenalty, n, logitBias, promptLogprobs, thinkingBudget, allowedTokenIds, badWords);
  }
}
