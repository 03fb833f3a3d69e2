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
 * detokenizing, how the output is parsed (reasoning, tool calls), streaming, timing, pinning,
 * echoing the prompt, and whether one tool call ends the output ({@code parallel_tool_calls:
 * false}), and whether a matched stop string is kept at the end of the text ({@code
 * include_stop_str_in_output}), its {@code priority}, and a chat's echoed final message. {@code model} is the name the request gave: the served model's, or a LoRA adapter's
 * ({@code lora}, null for the base model).
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
    boolean echo,
    boolean oneToolCall,
    String lora,
    boolean includeStopString,
    int priority,
    String echoedMessage) {

  public GenerationSpec(
      Kind kind, String model, List<int[]> prompts, int n, SamplingParams sampling, StopConditions stop, List<String> stopStrings,
      boolean skipSpecialTokens, boolean stream, boolean includeUsage, boolean timing, String pinnedWorker,
      StructuredOutput constraint, OutputParsers parsers) {
    this(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing, pinnedWorker,
        constraint, parsers, false, false, null, false, 0, null);
  }

  public GenerationSpec withSampling(SamplingParams s) {
    return new GenerationSpec(kind, model, prompts, n, s, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, echo, oneToolCall, lora, includeStopString, priority, echoedMessage);
  }

  /** Completions' {@code echo}: the prompt's text comes back before each choice's completion. */
  public GenerationSpec withEcho(boolean echo) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, echo, oneToolCall, lora, includeStopString, priority, echoedMessage);
  }

  /** Chat's {@code parallel_tool_calls: false}: the first complete tool call ends the output. */
  public GenerationSpec withOneToolCall(boolean oneToolCall) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, echo, oneToolCall, lora, includeStopString, priority, echoedMessage);
  }

  /** The output held to {@code c} (null: free). */
  public GenerationSpec withConstraint(StructuredOutput c) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, c, parsers, echo, oneToolCall, lora, includeStopString, priority, echoedMessage);
  }

  /** vLLM's {@code include_stop_str_in_output}: a matched stop string ends the text instead of being cut off. */
  public GenerationSpec withIncludeStopString(boolean include) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, echo, oneToolCall, lora, include, priority, echoedMessage);
  }

  /** vLLM's {@code priority}: lower first, where the workers schedule by it. */
  public GenerationSpec withPriority(int value) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, echo, oneToolCall, lora, includeStopString, value, echoedMessage);
  }

  /** vLLM's {@code echo} on chat: the final (assistant) message's text comes back before the continuation (null: none). */
  public GenerationSpec withEchoedMessage(String text) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, echo, oneToolCall, lora, includeStopString, priority, text);
  }

  /** The request names LoRA adapter {@code lora} (null: the base model). */
  public GenerationSpec withLora(String lora) {
    return new GenerationSpec(kind, model, prompts, n, sampling, stop, stopStrings, skipSpecialTokens, stream, includeUsage, timing,
        pinnedWorker, constraint, parsers, echo, oneToolCall, lora, includeStopString, priority, echoedMessage);
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
