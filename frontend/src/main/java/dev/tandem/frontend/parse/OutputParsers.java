package dev.tandem.frontend.parse;

import java.util.function.Predicate;

/**
 * The reasoning and tool-call formats a served model's output is parsed with: named by flag, or
 * ({@code auto}) recognised from what its chat template writes — {@code <think>} for Qwen3-style
 * reasoning, {@code <tool_call>} for Hermes, {@code [TOOL_CALLS]} for Mistral, {@code <|tool|>} (or
 * {@code functools}) for Phi-4-mini, {@code <|python_tag|>} or {@code "parameters"} for Llama 3 JSON.
 * {@code constrainedCalls} ({@code --tool-call-constraint}): whether tool calls the model writes
 * under {@code tool_choice: auto} are held to the offered tools' schemas, where the format and the
 * engine allow it.
 */
public record OutputParsers(ReasoningFormat reasoning, ToolCallFormat toolCalls, boolean constrainedCalls) {
  public static final OutputParsers NONE = new OutputParsers(ReasoningFormat.NONE, ToolCallFormat.NONE);

  /** Parsing only: nothing said about constraining calls. */
  public OutputParsers(ReasoningFormat reasoning, ToolCallFormat toolCalls) {
    this(reasoning, toolCalls, false);
  }

  /**
   * @param templateMentions whether the model's chat template contains a string
   * @throws IllegalArgumentException for an unknown parser name
   */
  public static OutputParsers resolve(String reasoningFlag, String toolCallFlag, Predicate<String> templateMentions) {
    return resolve(reasoningFlag, toolCallFlag, true, templateMentions);
  }

  /** As {@link #resolve(String, String, Predicate)}, with {@code constrainedCalls} as given. */
  public static OutputParsers resolve(String reasoningFlag, String toolCallFlag, boolean constrainedCalls, Predicate<String> templateMentions) {
    ReasoningFormat reasoning = reasoningFlag.equals("auto")
        ? (templateMentions.test("<think>") ? ReasoningFormat.QWEN3 : ReasoningFormat.NONE)
        : ReasoningFormat.of(reasoningFlag);
    ToolCallFormat tools;
    if (!toolCallFlag.equals("auto")) {
      tools = ToolCallFormat.of(toolCallFlag);
    } else if (templateMentions.test("<tool_call>")) {
      tools = ToolCallFormat.HERMES;
    } else if (templateMentions.test("[TOOL_CALLS]")) {
      tools = ToolCallFormat.MISTRAL;
    } else if (templateMentions.test("<|tool|>") || templateMentions.test("functools")) {
      tools = ToolCallFormat.PHI4_MINI_JSON;
    } else if (templateMentions.test("<|python_tag|>") || templateMentions.test("\"parameters\"")) {
      tools = ToolCallFormat.LLAMA3_JSON;
    } else {
      tools = ToolCallFormat.NONE;
    }
    return new OutputParsers(reasoning, tools, constrainedCalls);
  }
}
