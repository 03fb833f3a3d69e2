package dev.tandem.common;

import java.util.Arrays;

/**
 * vLLM's {@code thinking_token_budget}: at most {@code maxTokens} output tokens inside a reasoning
 * model's reasoning, after which its closing tag ({@code closeTokens}) is forced and the answer
 * follows. The reasoning is opened by {@code openTokens} at the start of the output, or, when
 * {@code opened}, the output starts inside it (the prompt opened it). A stream moved to another
 * worker mid-way counts on from the output so far ({@link GenerationRequest#resumedOutputTokens}).
 * Immutable; the arrays are copied in and must not be changed through the accessors.
 */
public record ThinkingBudget(int maxTokens, int[] openTokens, int[] closeTokens, boolean opened) {
  public ThinkingBudget {
    if (maxTokens < 0) {
      throw new IllegalArgumentException("the thinking budget must not be negative, was " + maxTokens);
    }
    openTokens = openTokens.clone();
    closeTokens = closeTokens.clone();
    if (closeTokens.length == 0 || (!opened && openTokens.length == 0)) {
      throw new IllegalArgumentException("a thinking budget needs the tokens that close the reasoning (and open it, unless opened)");
    }
  }

  /** The same tags with a budget of {@code tokens}. */
  public ThinkingBudget withMaxTokens(int tokens) {
    return new ThinkingBudget(tokens, openTokens, closeTokens, opened);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ThinkingBudget b && maxTokens == b.maxTokens && opened == b.opened
        && Arrays.equals(openTokens, b.openTokens) && Arrays.equals(closeTokens, b.closeTokens);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * Arrays.hashCode(openTokens) + Arrays.hashCode(closeTokens)) + maxTokens + (opened ? 1 : 0);
  }

  @Override
  public String toString() {
    return "ThinkingBudget[maxTokens=" + maxTokens + ", open=" + Arrays.toString(openTokens) + ", close="
        + Arrays.toString(closeTokens) + ", opened=" + opened + "]";
  }
}
