package dev.tandem.frontend.parse;

import java.util.Locale;

/** Where a model family writes its reasoning ({@code --reasoning-parser}). */
public enum ReasoningFormat {
  /** No reasoning parsing: everything is content. */
  NONE,
  /** Qwen3: output that starts with {@code <think>} is reasoning up to {@code </think>}. */
  QWEN3,
  /** DeepSeek-R1: the template opens {@code <think>}; output is reasoning up to {@code </think>}. */
  DEEPSEEK_R1;

  /** {@code none}, {@code qwen3}, {@code deepseek_r1}. */
  public String flagName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * @throws IllegalArgumentException naming the accepted values
   */
  public static ReasoningFormat of(String name) {
    for (ReasoningFormat f : values()) {
      if (f.flagName().equals(name)) {
        return f;
      }
    }
    throw new IllegalArgumentException("--reasoning-parser: unknown parser '" + name + "' (auto, none, qwen3, deepseek_r1)");
  }
}
