package dev.tandem.engine.builtin;

import dev.tandem.common.ThinkingBudget;

/**
 * Follows one sequence's output through its reasoning, token by token, and once the reasoning has
 * taken its budget names the closing tag's tokens to force, one a draw. The reasoning opens at the
 * first output token (or was opened by the prompt), and is over at its first closing tag; output
 * that does not begin with the opening tag has none, and is not followed further.
 *
 * <p>Threading: the engine thread (owned by the sequence's sampling state).
 */
final class ThinkingBudgetTracker {
  private final ThinkingBudget budget;
  private boolean inside;
  private boolean over; // the reasoning has closed, or never opened: nothing more to do
  private int openMatched; // tokens of the opening tag seen so far
  private int closeMatched; // tokens of the closing tag the output ends with
  private int spent; // output tokens inside the reasoning

  ThinkingBudgetTracker(ThinkingBudget budget) {
    this.budget = budget;
    this.inside = budget.opened();
  }

  /** The token the next draw must be (the closing tag's next one), or -1 where the draw is free. */
  int forced() {
    return !over && inside && spent >= budget.maxTokens() ? budget.closeTokens()[closeMatched] : -1;
  }

  /** Moves past an output token. */
  void accept(int token) {
    if (over) {
      return;
    }
    if (!inside) {
      if (token == budget.openTokens()[openMatched]) {
        inside = ++openMatched == budget.openTokens().length;
      } else {
        over = true; // the output did not start with the opening tag: no reasoning to bound
      }
      return;
    }
    spent++;
    int[] close = budget.closeTokens();
    if (token == close[closeMatched]) {
      closeMatched++;
    } else {
      closeMatched = token == close[0] ? 1 : 0;
    }
    if (closeMatched == close.length) {
      over = true;
    }
  }

  /** Output tokens spent inside the reasoning so far. */
  int spent() {
    return spent;
  }
}
