package dev.tandem.engine.sched;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class SpeculativeConfigTest {
  private static SpeculativeConfig parse(String json) {
    return SpeculativeConfig.parse(json, "--speculative-config");
  }

  private static String refused(String json) {
    return assertThrows(IllegalArgumentException.class, () -> parse(json)).getMessage();
  }

  @Test
  void readsVllmsNgramConfigWithItsDefaults() {
    assertEquals(SpeculativeConfig.OFF, parse(null));
    assertEquals(SpeculativeConfig.OFF, parse(" "));
    assertEquals(new SpeculativeConfig(5, 4, 2), parse("{\"method\": \"ngram\", \"num_speculative_tokens\": 5}"));
    assertEquals(new SpeculativeConfig(5, 3, 2), parse("{\"method\": \"ngram\", \"num_speculative_tokens\": 5, \"prompt_lookup_max\": 3}"));
    assertEquals(new SpeculativeConfig(3, 1, 1), parse("{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 1}"));
    assertEquals(new SpeculativeConfig(3, 6, 6), parse("{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_min\": 6}"));
  }

  @Test
  void badConfigsAreRefusedNamingTheField() {
    assertTrue(refused("{\"method\": \"ngram\"}").contains("'num_speculative_tokens' must be 1..15 and is required"));
    assertTrue(refused("{\"method\": \"ngram\", \"num_speculative_tokens\": 2.5}").contains("'num_speculative_tokens' must be an integer"));
    assertTrue(refused("{\"method\": \"ngram\", \"num_speculative_tokens\": 2, \"prompt_lookup_max\": 1, \"prompt_lookup_min\": 3}")
        .contains("'prompt_lookup_max' (1) is less than 'prompt_lookup_min' (3)"));
    assertTrue(refused("{\"method\": \"ngram\", \"num_speculative_tokens\": 2, \"prompt_lookup_min\": 0}").contains("'prompt_lookup_min' must be at least 1"));
    assertTrue(refused("{\"num_speculative_tokens\": 2}").contains("'method' is required"));
    assertTrue(refused("{\"method\": \"draft_model\", \"num_speculative_tokens\": 2}").contains("method 'draft_model' is not supported"));
    assertTrue(refused("[1]").contains("must be a JSON object"));
    assertTrue(refused("{\"method\": \"ngram\", \"num_speculative_tokens\": 2, \"model\": \"x\"}").contains("unknown field 'model'"));
  }

  private static int[] propose(SpeculativeConfig c, int max, int... tokens) {
    int[] out = new int[8];
    int n = c.propose(tokens, tokens.length, max, out);
    return Arrays.copyOf(out, n);
  }

  @Test
  void proposesWhatFollowedTheLatestLongestMatch() {
    SpeculativeConfig c = new SpeculativeConfig(4, 3, 1);
    // "5 2 3" never occurred before; "2 3" did, followed by 7 8.
    assertArrayEquals(new int[] {7, 8}, propose(c, 2, 1, 2, 3, 7, 8, 5, 2, 3));
    assertArrayEquals(new int[] {9, 4}, propose(c, 2, 0, 2, 3, 5, 0, 1, 2, 3, 9, 4, 1, 2, 3), "the longer 3-gram 1 2 3 first");
    assertArrayEquals(new int[] {}, propose(c, 4, 1, 2, 3, 4), "nothing repeats: nothing proposed");
    assertArrayEquals(new int[] {}, propose(new SpeculativeConfig(4, 3, 2), 4, 5, 1, 2, 3, 1), "a 1-gram is below the minimum");
    // A match that runs into the end continues as the repeat it found: 1 2 3 1 2 → 3 1 2 3.
    assertArrayEquals(new int[] {3, 1, 2, 3}, propose(c, 4, 1, 2, 3, 1, 2));
    assertArrayEquals(new int[] {7, 7, 7}, propose(c, 3, 7, 7, 7));
    assertArrayEquals(new int[] {}, propose(c, 0, 1, 2, 1, 2), "max 0");
  }
}
