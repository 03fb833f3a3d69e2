package dev.tandem.frontend.openai;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StructuredOutput;
import dev.tandem.frontend.parse.OutputParsers;
import java.util.List;

/**
 * A validated chat or text completion request, ready to run: the tokenized prompts, how many
 * choices per prompt, sampling (log-probabilities included) and stop rules as the workers get
 * them, an optional constraint on the output, and the frontend's own options: stop strings,
 * detokenizing, how the output is parsed (reasoning, tool calls), streaming, timing, pinning, its
 * {@code priority}, vLLM's {@code cache_salt} (null: none), and what the response shows beside the
 * text ({@link Output}), and vLLM's beam search ({@link Beam}; null: none, each choice is sampled). {@code model} is
 * the name the request gave: the served model's, or a LoRA adapter's ({@code lora}, null for the
 * base model).
 */
public record GenerationSpec(
    Kind kind,
    String model,
    List<int[]> prompts,
    int n,
    SamplingParams sampling,
    StopConditions stop,
    List<String> stopStrings,
    boolean skipSpecialTokens,
    boolean stream,
    boolean includeUsage,
    boolean timing,
    String pinnedWorker,
    StructuredOutput constraint,
    OutputParsers parsers,
    String lora,
    int priority,
    String cacheSalt,
    Output output,
    Beam beam) {

  /**
   * How the response is written around the generated text: completions' {@code echo} (the prompt's
   * text first), chat's {@code parallel_tool_calls: false} ({@code oneToolCall}: the first complete
   * call ends the output), vLLM's {@code include_stop_str_in_output}, chat's echoed final message
   * (null: none), vLLM's {@code return_token_ids} (the prompt's and the output's token ids beside
   * the text), {@code return_tokens_as_token_ids} (log-probabilities name tokens as {@code
   * token_id:N}), {@code stream_options.continuous_usage_stats} (each streamed chunk carries its
   * choice's usage so far) and vLLM's {@code prompt_logprobs} (-1: none; else each prompt token's
   * log-probability, rank and this many likeliest alternatives, beside the text), vLLM's {@code
   * include_reasoning} (false: the reasoning is parsed out of the output and not returned) and
   * vLLM's {@code request_id} (the response's id ends with it; null: a random one).
   */
  public record Output(boolean echo, boolean oneToolCall, boolean includeStopString, String echoedMessage, boolean tokenIds,
      boolean tokensAsIds, boolean continuousUsage, int promptLogprobs, boolean includeReasoning, String requestId) {
    public static final Output PLAIN = new Output(false, false, false, null, false, false, false, -1, true, null);

    Output withEcho(boolean v) {
      return new Output(v, oneToolCall, includeStopString, echoedMessage, tokenIds, tokensAsIds, continuousUsage, promptLogprobs,
          includeReasoning, requestId);
    }

    Output withOneToolCall(boolean v) {
      return new Output(echo, v, includeStopString, echoedMessage, tokenIds, tokensAsIds, continuousUsage, promptLogprobs,
          includeReasoning, requestId);
    }

    Output withIncludeStopString(boolean v) {
      return new Output(echo, oneToolCall, v, echoedMessage, tokenIds, tokensAsIds, continuousUsage, promptLogprobs,
          includeReasoning, requestId);
    }

    Output withEchoedMessage(String v) {
      return new Output(echo, oneToolCall, includeStopString, v, tokenIds, tokensAsIds, continuousUsage, promptLogprobs,
          includeReasoning, requestId);
    }

    Output withPromptLogprobs(int top) {
      return new Output(echo, oneToolCall, includeStopString, echoedMessage, tokenIds, tokensAsIds, continuousUsage, top,
          includeReasoning, requestId);
    }

    Output withContinuousUsage(boolean v) {
      return new Output(echo, oneToolCall, includeStopString, echoedMessage, tokenIds, tokensAsIds, v, promptLogprobs,
          includeReasoning, requestId);
    }

    Output withIncludeReasoning(boolean v) {
      return new Output(echo, oneToolCall, includeStopString, echoedMessage, tokenIds, tokensAsIds, continuousUsage, promptLogprobs, v,
          requestId);
    }

    Output withRequestId(String v) {
      return new Output(echo, oneToolCall, includeStopString, echoedMessage, tokenIds, tokensAsIds, continuousUsage, promptLogprobs,
          includeReasoning, v);
    }

    Output withTokenIds(boolean ids, boolean asIds) {
      return new Output(echo, oneToolCall, includeStopString, echoedMessage, ids, asIds, continuousUsage, promptLogprobs,
          includeReasoning, requestId);
    }
  }

  public GenerationSpec(
      Kind kind, String model, List<int[]> prompts, int n, SamplingParams sampling, StopConditions stop, List<String> stopStrings,
      boolean skipSpecialTokens, boolean stream, boolean includeUsage, boolean timing, String pinnedWorker,
      StructuredOutput constraint, OutputParsers parsers) {
    this(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing, pinnedWorker,
        constraint, parsers, null, 0, null, Output.PLAIN, null);
  }

  public GenerationSpec withSampling(SamplingParams s) {
    return new GenerationSpec(kind, model, prompts, n, s, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, lora, priority, cacheSalt, output, beam);
  }

  /** The output held to {@code c} (null: free). */
  public GenerationSpec withConstraint(StructuredOutput c) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, c, parsers, lora, priority, cacheSalt, output, beam);
  }

  /** vLLM's {@code priority}: lower first, where the workers schedule by it. */
  public GenerationSpec withPriority(int value) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, lora, value, cacheSalt, output, beam);
  }

  /** The request names LoRA adapter {@code lora} (null: the base model). */
  public GenerationSpec withLora(String lora) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, lora, priority, cacheSalt, output, beam);
  }

  /** vLLM's {@code cache_salt}: only requests with the same salt share cached prompt blocks (null: none). */
  public GenerationSpec withCacheSalt(String salt) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, lora, priority, salt, output, beam);
  }

  /** The response written around the text as {@code o} says. */
  public GenerationSpec withOutput(Output o) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, lora, priority, cacheSalt, o, beam);
  }

  /**
   * vLLM's beam search ({@code use_beam_search}): the {@code width} likeliest sequences are kept at
   * each step ({@code n} of the request), and the ones returned are ranked by their summed
   * log-probability ÷ (prompt and output tokens)^{@code lengthPenalty}.
   */
  public record Beam(int width, double lengthPenalty) {}

  /** Searched with {@code b} instead of sampled (null: sampled). */
  public GenerationSpec withBeam(Beam b) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, lora, priority, cacheSalt, output, b);
  }

  /** Completions' {@code echo}: the prompt's text comes back before each choice's completion. */
  public GenerationSpec withEcho(boolean echo) {
    return withOutput(output.withEcho(echo));
  }

  /** Chat's {@code parallel_tool_calls: false}: the first complete tool call ends the output. */
  public GenerationSpec withOneToolCall(boolean oneToolCall) {
    return withOutput(output.withOneToolCall(oneToolCall));
  }

  /** vLLM's {@code include_stop_str_in_output}: a matched stop string ends the text instead of being cut off. */
  public GenerationSpec withIncludeStopString(boolean include) {
    return withOutput(output.withIncludeStopString(include));
  }

  /** vLLM's {@code echo} on chat: the final (assistant) message's text comes back before the continuation (null: none). */
  public GenerationSpec withEchoedMessage(String text) {
    return withOutput(output.withEchoedMessage(text));
  }

  /** vLLM's {@code return_token_ids} and {@code return_tokens_as_token_ids}. */
  public GenerationSpec withTokenIds(boolean tokenIds, boolean tokensAsIds) {
    return withOutput(output.withTokenIds(tokenIds, tokensAsIds));
  }

  /** vLLM's {@code prompt_logprobs}: {@code top} alternatives for each prompt token (-1: none); the workers are asked for them too. */
  public GenerationSpec withPromptLogprobs(int top) {
    GenerationSpec s = withOutput(output.withPromptLogprobs(top));
    return top < 0 ? s : s.withSampling(sampling.withPromptLogprobs(Math.max(top, sampling.promptLogprobs())));
  }

  /** vLLM's {@code stream_options.continuous_usage_stats} (with {@code include_usage}). */
  public GenerationSpec withContinuousUsage(boolean continuous) {
    return withOutput(output.withContinuousUsage(continuous));
  }

  /** vLLM's {@code include_reasoning}: false drops the reasoning parsed out of the output. */
  public GenerationSpec withIncludeReasoning(boolean include) {
    return withOutput(output.withIncludeReasoning(include));
  }

  /** vLLM's {@code request_id}: the response's id ends with it (null: a random one). */
  public GenerationSpec withRequestId(String requestId) {
    return withOutput(output.withRequestId(requestId));
  }

  public boolean echo() {
    return output.echo();
  }

  public boolean oneToolCall() {
    return output.oneToolCall();
  }

  public boolean includeStopString() {
    return output.includeStopString();
  }

  public String echoedMessage() {
    return output.echoedMessage();
  }

  public GenerationSpec {
    prompts = List.copyOf(prompts);
    stopStrings = List.copyOf(stopStrings);
  }

  /** Which OpenAI endpoint the request came through. */
  public enum Kind {
    CHAT,
    COMPLETION
  }

  /** -1 when no log-probabilities are wanted, else how many top alternatives to return with each token. */
  public int logprobs() {
    return sampling.logprobs();
  }

  public int maxTokens() {
    return stop.maxTokens();
  }

  /** Total number of sequences generated: prompts × n. */
  public int choiceCount() {
    return prompts.size() * n;
  }
}
