package dev.tandem.common;

import java.util.Arrays;

/**
 * vLLM's {@code thinking_token_budget}: at most {@code maxTokens} output tokens inside a reasoning
 * model's reasoning, after which its closing tag ({@code closeTokens}) is forced and the answer
 * follows. The reasoning is opened by {@code openTokens} at the start of the output, or, when
 * {@code opened}, the output starts inside it (the prompt opened it). {@code resumeTokens}: the
 * last that many prompt tokens are output already generated (a stream moved to another worker
 * mid-way); the count goes on after them. Immutable; the arrays are copied in and must not be
 * changed through the accessors.
 */
public record ThinkingBudget(int maxTokens, int[] openTokens, int[] closeTokens, boolean opened, int resumeTokens) {
  public ThinkingBudget {
    if (maxTokens < 0) {
      throw new IllegalArgumentException("the thinking budget must not be negative, was " + maxTokens);
    }
    if (resumeTokens < 0) {
      throw new IllegalArgumentException("resumeTokens must not be negative, was " + resumeTokens);
    }
    openTokens = openTokens.clone();
    closeTokens = closeTokens.clone();
    if (closeTokens.length == 0 || (!opened && openTokens.length == 0)) {
      throw new IllegalArgumentException("a thinking budget needs the tokens that close the reasoning (and open it, unless opened)");
    }
  }

  /** The same budget, resumed after {@code tokens} output tokens already generated. */
  public ThinkingBudget resumedAfter(int tokens) {
    return new ThinkingBudget(maxTokens, openTokens, closeTokens, opened, tokens);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ThinkingBudget b && maxTokens == b.maxTokens && opened == b.opened && resumeTokens == b.resumeTokens
        && Arrays.equals(openTokens, b.openTokens) && Arrays.equals(closeTokens, b.closeTokens);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * Arrays.hashCode(openTokens) + Arrays.hashCode(closeTokens)) + maxTokens + (opened ? 1 : 0) + 7 * resumeTokens;
  }

  @Override
  public String toString() {
    return "ThinkingBudget[maxTokens=" + maxTokens + ", open=" + Arrays.toString(openTokens) + ", close="
        + Arrays.toString(closeTokens) + ", opened=" + opened + ", resumeTokens=" + resumeTokens + "]";
  }
}
