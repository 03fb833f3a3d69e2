package dev.tandem.engine.builtin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tandem.common.ThinkingBudget;
import org.junit.jupiter.api.Test;

/** Where a reasoning's budget runs out, which tokens are then forced, and when it stops caring. */
class ThinkingBudgetTrackerTest {
  private static final int OPEN = 5;
  private static final int[] CLOSE = {7, 8};

  /** The token each of {@code tokens} would be forced to (-1: free), accepting the token drawn. */
  private static String forcedAlong(ThinkingBudget budget, int... tokens) {
    ThinkingBudgetTracker t = new ThinkingBudgetTracker(budget);
    StringBuilder out = new StringBuilder();
    for (int token : tokens) {
      out.append(t.forced()).append(' ');
      t.accept(token == -1 ? Math.max(0, t.forced()) : token);
    }
    return out.append(t.forced()).toString();
  }

  @Test
  void anOpenedReasoningIsClosedOnceItHasTakenItsBudget() {
    ThinkingBudget three = new ThinkingBudget(3, new int[] {OPEN}, CLOSE, true);
    // three free tokens, then the closing tag's two, then free again
    assertEquals("-1 -1 -1 7 8 -1", forcedAlong(three, 1, 2, 3, -1, -1));
    assertEquals("7 8 -1", forcedAlong(new ThinkingBudget(0, new int[] {OPEN}, CLOSE, true), -1, -1), "budget 0: close at once");
    assertEquals("-1 -1 -1 -1", forcedAlong(three, 1, 7, 8), "a reasoning the model closes itself is never forced");
    assertEquals("-1 -1 -1 8 -1", forcedAlong(three, 1, 2, 7, -1), "the tag the model began is finished, not begun again");
    assertEquals("-1 -1 -1 7 8 -1", forcedAlong(three, 7, 1, 2, -1, -1), "a tag broken off counts as reasoning");
  }

  @Test
  void aReasoningTheOutputMayOpenCountsFromItsOpeningTag() {
    ThinkingBudget two = new ThinkingBudget(2, new int[] {OPEN}, CLOSE, false);
    assertEquals("-1 -1 -1 7 8 -1", forcedAlong(two, OPEN, 1, 2, -1, -1));
    assertEquals("-1 -1 -1 -1 -1", forcedAlong(two, 1, 2, 3, 4), "an output that does not open it has no reasoning to bound");
    ThinkingBudget twoTokenTag = new ThinkingBudget(0, new int[] {4, OPEN}, CLOSE, false);
    assertEquals("-1 -1 7 8 -1", forcedAlong(twoTokenTag, 4, OPEN, -1, -1));
  }

  @Test
  void aResumedBudgetCountsOnFromTheTokensSoFar() {
    // BuiltinEngine replays the resumed tokens through accept(); here the same by hand.
    ThinkingBudgetTracker t = new ThinkingBudgetTracker(new ThinkingBudget(3, new int[] {OPEN}, CLOSE, false));
    for (int token : new int[] {OPEN, 1, 2}) {
      t.accept(token);
    }
    assertEquals(2, t.spent());
    assertEquals(-1, t.forced());
    t.accept(3);
    assertEquals(7, t.forced());
  }
}
