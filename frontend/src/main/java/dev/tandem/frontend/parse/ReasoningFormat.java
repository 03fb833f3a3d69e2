package dev.tandem.frontend.parse;

import dev.tandem.common.StructuredOutput;
import dev.tandem.common.ThinkingBudget;
import dev.tandem.frontend.text.TextTokenizer;
import java.util.Locale;

/** Where a model family writes its reasoning ({@code --reasoning-parser}). */
public enum ReasoningFormat {
  /** No reasoning parsing: everything is content. */
  NONE,
  /** Qwen3: output that starts with {@code <think>} is reasoning up to {@code </think>}. */
  QWEN3,
  /** DeepSeek-R1: the template opens {@code <think>}; output is reasoning up to {@code </think>}. */
  DEEPSEEK_R1;

  /**
   * Where a structured output's constraint starts in an output parsed this way: after the
   * reasoning, which the engine leaves free (as vLLM and SGLang do with a reasoning parser). Qwen3:
   * the output may open {@code <think>} … {@code </think>} or go straight to the value; DeepSeek-R1:
   * the output is reasoning up to {@code </think>}.
   */
  public StructuredOutput.Reasoning constraintAfter() {
    return switch (this) {
      case NONE -> StructuredOutput.Reasoning.NONE;
      case QWEN3 -> new StructuredOutput.Reasoning(ReasoningSplitter.OPEN, ReasoningSplitter.CLOSE, false);
      case DEEPSEEK_R1 -> new StructuredOutput.Reasoning(ReasoningSplitter.OPEN, ReasoningSplitter.CLOSE, true);
    };
  }

  /**
   * A budget of {@code maxTokens} on reasoning written this way, its tags as {@code tokenizer}
   * writes them.
   *
   * @throws IllegalStateException for {@link #NONE}
   */
  public ThinkingBudget thinkingBudget(int maxTokens, TextTokenizer tokenizer) {
    if (this == NONE) {
      throw new IllegalStateException("no reasoning to bound");
    }
    return new ThinkingBudget(maxTokens, tokenizer.encode(ReasoningSplitter.OPEN, false), tokenizer.encode(ReasoningSplitter.CLOSE, false),
        this == DEEPSEEK_R1);
  }

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
