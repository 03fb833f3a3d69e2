package dev.tandem.frontend.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.TokenLogprob;
import java.util.List;
import org.junit.jupiter.api.Test;

/** vLLM's beam search on hand-computed steps: which beams live on, which end, and how the end ranks them. */
class BeamSearchTest {
  private static final int END = 0;

  /** What a worker reports for a beam's next token: alternatives as (token, log-probability) pairs, likeliest first. */
  private static TokenLogprob next(Object... pairs) {
    int[] ids = new int[pairs.length / 2];
    float[] lps = new float[pairs.length / 2];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = (Integer) pairs[2 * i];
      lps[i] = ((Number) pairs[2 * i + 1]).floatValue();
    }
    return new TokenLogprob(lps[0], ids, lps, 1);
  }

  private static List<int[]> tokens(List<BeamSearch.Beam> beams) {
    return beams.stream().map(BeamSearch.Beam::tokens).toList();
  }

  /**
   * Width 2, prompt of 3 tokens, two steps. Step 1: [5] -0.1, [6] -0.5 live; [END] -1.0 ends;
   * [7] -2.0 is dropped. Step 2: [5,END] -0.3 and [6,END] -2.5 end; of [5,8] -1.6, [5,9] -3.1,
   * [5,10] -3.6, [6,11] -0.6, [6,12] -0.8, [6,13] -4.5 the two likeliest live. Scores (length
   * penalty 1, the end token not counted): [END] -1.0/3, [5,END] -0.3/4 = -0.075, [6,END] -2.5/4,
   * [6,11] -0.6/5 = -0.12, [6,12] -0.8/5 = -0.16.
   */
  @Test
  void keepsTheLikeliestExtensionsAndRanksTheEndedAndTheLiveByScore() {
    BeamSearch search = new BeamSearch(3, 2, 1.0, 2, 0, new int[] {END});
    assertEquals(4, search.alternatives());
    assertEquals(1, search.live().size(), "the search starts from the prompt alone");
    search.advance(List.of(next(5, -0.1, 6, -0.5, END, -1.0, 7, -2.0)));
    assertEquals(List.of(List.of(5), List.of(6)), search.live().stream().map(b -> List.of(b.tokens()[0])).toList());
    assertFalse(search.done());
    search.advance(List.of(next(8, -1.5, END, -0.2, 9, -3.0, 10, -3.5), next(11, -0.1, 12, -0.3, END, -2.0, 13, -4.0)));
    assertTrue(search.done(), "max tokens reached");
    assertEquals(List.of(), search.live());

    List<BeamSearch.Beam> best = search.best();
    assertEquals(2, best.size());
    assertArrayEquals(new int[] {5, END}, best.get(0).tokens());
    assertTrue(best.get(0).ended());
    assertEquals(-0.3, best.get(0).logprob(), 1e-6);
    assertEquals(-0.075, search.score(best.get(0)), 1e-6);
    assertArrayEquals(new int[] {6, 11}, best.get(1).tokens());
    assertFalse(best.get(1).ended());
    assertEquals(-0.12, search.score(best.get(1)), 1e-6);
    // Each token keeps its own log-probability and its rank among what its step reported.
    assertEquals(-0.5f, best.get(1).logprobs()[0].logprob());
    assertEquals(2, best.get(1).logprobs()[0].rank());
    assertEquals(-0.1f, best.get(1).logprobs()[1].logprob());
    assertEquals(1, best.get(1).logprobs()[1].rank());
    assertArrayEquals(new int[] {11, 12, END, 13}, best.get(1).logprobs()[1].topTokenIds());
  }

  /**
   * Width 1: [END] -0.9 ends at step 1, [5] -0.05 lives and becomes [5,6] -1.1. Without a length
   * penalty the short one wins (-0.9 > -1.1); with 1, -0.9/3 = -0.3 < -1.1/5 = -0.22 and the long one does.
   */
  @Test
  void theLengthPenaltyDecidesBetweenAShortAndALongSequence() {
    for (double penalty : new double[] {0.0, 1.0}) {
      BeamSearch search = new BeamSearch(3, 1, penalty, 2, 0, new int[] {END});
      search.advance(List.of(next(5, -0.05, END, -0.9)));
      search.advance(List.of(next(6, -1.05, 7, -2.0)));
      int[] expected = penalty == 0 ? new int[] {END} : new int[] {5, 6};
      assertArrayEquals(expected, search.best().getFirst().tokens(), "length penalty " + penalty);
    }
  }

  @Test
  void anEndTokenBeforeMinTokensIsDroppedNotEnded() {
    BeamSearch search = new BeamSearch(3, 1, 0.0, 2, 1, new int[] {END});
    search.advance(List.of(next(END, -0.01, 5, -5.0)));
    search.advance(List.of(next(END, -0.1, 6, -0.5)));
    assertEquals(List.of(List.of(5, END)), tokens(search.best()).stream().map(t -> List.of(t[0], t[1])).toList(),
        "the first token could not end the sequence; the second could");
  }

  @Test
  void aSearchWhoseEveryExtensionEndsIsOverBeforeMaxTokensAndTiesKeepTheirOrder() {
    BeamSearch search = new BeamSearch(3, 1, 1.0, 10, 0, new int[] {END, 1});
    search.advance(List.of(next(END, -0.5, 1, -0.5, 5, Float.NEGATIVE_INFINITY)));
    assertTrue(search.done(), "no beam is left: a token the model cannot produce is never extended");
    assertEquals(List.of(), search.live());
    assertArrayEquals(new int[] {END}, search.best().getFirst().tokens(), "a tie keeps the order the worker gave");

    BeamSearch two = new BeamSearch(3, 2, 1.0, 1, 0, new int[] {END});
    two.advance(List.of(next(9, -1.0, 8, -1.0, 7, -1.0)));
    assertEquals(List.of(9, 8), tokens(two.best()).stream().map(t -> t[0]).toList());
  }

  @Test
  void aStepMustReportEveryLiveBeam() {
    BeamSearch search = new BeamSearch(3, 2, 1.0, 2, 0, new int[] {END});
    assertThrows(IllegalArgumentException.class, () -> search.advance(List.of()));
  }
}
