package dev.tandem.frontend.parse;

import java.util.Locale;

/** How a model family writes tool calls ({@code --tool-call-parser}). */
public enum ToolCallFormat {
  /** No tool-call parsing: calls stay in the content. */
  NONE,
  /** Hermes, Qwen2.5/Qwen3: {@code <tool_call>{"name": …, "arguments": {…}}</tool_call>}, repeated. */
  HERMES,
  /** Llama 3.x: the whole output is {@code {"name": …, "parameters": {…}}} (several separated by ';'). */
  LLAMA3_JSON,
  /** Mistral: {@code [TOOL_CALLS][{"name": …, "arguments": {…}}, …]}. */
  MISTRAL,
  /** Llama 3.2/4 pythonic: the whole output is {@code [f(a=1, b="x"), g()]}. */
  PYTHONIC;

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
        "--tool-call-parser: unknown parser '" + name + "' (auto, none, hermes, qwen3, llama3_json, mistral, pythonic)");
  }
}
