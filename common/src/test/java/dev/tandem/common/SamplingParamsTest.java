package dev.tandem.common;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class SamplingParamsTest {
  /** vLLM's bad_words: a one-token word always; a longer one only where the output ends with all of it but its last token. */
  @Test
  void aBadWordsLastTokenIsBannedWhereTheOutputEndsWithTheRest() {
    var p = SamplingParams.greedy().withBadWords(List.of(List.of(5), List.of(1, 2, 3)));
    int[] tokens = {9, 9, 1, 2};
    assertArrayEquals(new int[] {5, 3}, p.bannedAfter(tokens, 2, 4), "the output is 1 2: 3 would complete 1 2 3");
    assertArrayEquals(new int[] {5}, p.bannedAfter(tokens, 3, 4), "the 1 is prompt, not output: only the one-token word");
    assertArrayEquals(new int[] {5}, p.bannedAfter(new int[] {1, 2, 4}, 0, 3));
    assertArrayEquals(new int[0], SamplingParams.greedy().bannedAfter(tokens, 0, 4));
    assertThrows(IllegalArgumentException.class, () -> SamplingParams.greedy().withBadWords(List.of(List.of())));
  }
}
