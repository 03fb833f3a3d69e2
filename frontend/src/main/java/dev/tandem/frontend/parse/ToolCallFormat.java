package dev.tandem.frontend.parse;

import java.util.Locale;

/** How a model family writes tool calls ({@code --tool-call-parser}). */
public enum ToolCallFormat {
  /** No tool-call parsing: calls stay in the content. */
  NONE,
  /** Hermes, Qwen2.5/Qwen3: {@code <tool_call>{"name": …, "arguments": {…}}</tool_call>}, repeated. */
  HERMES,
  /**
   * Phi-4-mini: {@code <|tool_call|>[{"name": …, "arguments": {…}}, …]<|/tool_call|>} (the closing
   * tag often missing), or {@code functools[…]} (what vLLM's template for it asks for); its own chat
   * template reads the tools from the system message.
   */
  PHI4_MINI_JSON,
  /** Llama 3.x: the whole output is {@code {"name": …, "parameters": {…}}} (several separated by ';'). */
  LLAMA3_JSON,
  /** Mistral: {@code [TOOL_CALLS][{"name": …, "arguments": {…}}, …]}. */
  MISTRAL,
  /** Llama 3.2/4 pythonic: the whole output is {@code [f(a=1, b="x"), g()]}. */
  PYTHONIC;

  /**
   * The marker texts this format's calls are written with. Where one is a special token of the
   * model's tokenizer ({@code [TOOL_CALLS]} in Mistral's, possibly {@code <|tool_call|>} in
   * Phi-4-mini's), its text is kept in the output even though special tokens are skipped, so the
   * parser sees it.
   */
  public java.util.List<String> markers() {
    return switch (this) {
      case NONE, PYTHONIC -> java.util.List.of();
      case HERMES -> java.util.List.of("<tool_call>", "</tool_call>");
      case PHI4_MINI_JSON -> java.util.List.of("<|tool_call|>", "<|/tool_call|>");
      case LLAMA3_JSON -> java.util.List.of("<|python_tag|>");
      case MISTRAL -> java.util.List.of("[TOOL_CALLS]");
    };
  }

  public String flagName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * {@code qwen3} is accepted as another name for hermes.
   *
   * @throws IllegalArgumentException naming the accepted values
   */
  public static ToolCallFormat of(String name) {
    if (name.equals("qwen3") || name.equals("qwen")) {
      return HERMES;
    }
    for (ToolCallFormat f : values()) {
      if (f.flagName().equals(name)) {
        return f;
      }
    }
    throw new IllegalArgumentException(
        "--tool-call-parser: unknown parser '" + name + "' (auto, none, hermes, qwen3, llama3_json, mistral, pythonic, phi4_mini_json)");
  }
}
