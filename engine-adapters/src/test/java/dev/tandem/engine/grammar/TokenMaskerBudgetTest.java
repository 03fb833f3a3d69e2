package dev.tandem.engine.grammar;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.StructuredOutput;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Near {@code max_tokens} the masker allows only tokens after which the rest still fits: checked
 * against every token of the real Qwen3 vocabulary advanced one by one, in states a random model
 * reaches — whether the masker answered from its frames' records of what their tokens leave or by
 * walking the vocabulary.
 */
@org.junit.jupiter.api.Tag("e2e") // 151,936 tokens advanced per checked mask: seconds
class TokenMaskerBudgetTest {
  private static final int[] ENDS = {GrammarTesting.IM_END};

  @Test
  void aBudgetedMaskIsExactlyTheTokensAfterWhichTheRestFits() {
    TokenMasker masker = GrammarTesting.qwen3();
    String person = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},"
        + "\"required\":[\"name\",\"age\"]}";
    List<StructuredOutput> constraints = List.of(
        StructuredOutput.structuralTag("{\"triggers\":[\"<f=\",\"@\"],\"structures\":[{\"begin\":\"<f=p>\",\"schema\":" + person
            + ",\"end\":\"</f>\"},{\"begin\":\"@\",\"schema\":{\"enum\":[\"a\",\"bb\"]},\"end\":\";\"}]}"),
        StructuredOutput.jsonSchema(person).withReasoning(new StructuredOutput.Reasoning("<think>", "</think>", true)),
        StructuredOutput.choice("[\"positive\",\"negative\"]").withReasoning(new StructuredOutput.Reasoning("<think>", "</think>", false)));
    long[] mask = new long[masker.maskWords()];
    long lookups = masker.budgetLookups();
    int checked = 0;
    for (StructuredOutput c : constraints) {
      Grammar g = OutputGrammars.compile(c);
      SplittableRandom random = new SplittableRandom(c.spec().length());
      GrammarState state = g.newState();
      // Texts that stop in free text, inside a tag or trigger, and inside a value.
      for (String text : List.of("", "Some text <f", "Some text <f=p>{\"name\":\"Jo", "@", "Let me think about it </thi",
          "hmm</think>\n{\"name\":\"x\",\"age\":1", "hmm</think>\n{\"name\":\"Jo", "<think>no")) {
        GrammarState s = g.newState();
        if (!s.advance(text.getBytes(StandardCharsets.UTF_8))) {
          continue;
        }
        int left = s.remainingBytes();
        // A budget too small for the rest, and budgets at the edge: exactly what it needs, and one more.
        for (int tokensLeft : new int[] {2, left + 2, left + 3}) {
          int n = masker.mask(s, tokensLeft, ENDS, mask);
          assertArrayEquals(reference(masker, s, tokensLeft), mask, () -> c.spec() + " after '" + text + "', " + tokensLeft + " tokens left");
          assertTrue(n > 0);
          checked++;
        }
      }
      // And wherever a random model goes under the masks.
      for (int step = 0; step < 12; step++) {
        int n = masker.mask(state, 64, ENDS, mask);
        int token = GrammarTesting.pick(mask, n, random);
        if (token == GrammarTesting.IM_END || !state.advance(masker.vocabulary().bytes(token))) {
          break;
        }
      }
      masker.mask(state, 6, ENDS, mask);
      assertArrayEquals(reference(masker, state, 6), mask, c::spec);
    }
    assertTrue(checked >= 40, "masks checked: " + checked);
    assertTrue(masker.budgetLookups() > lookups, "some budgeted masks came from the frames' records");
  }

  /**
   * What the masker's budget allows from {@code state}, worked out token by token: those after
   * which at most {@code tokensLeft - 2} bytes complete the output (or, where that cannot be met,
   * fewer than now), the end token once complete; every live token where nothing qualifies.
   */
  private static long[] reference(TokenMasker masker, GrammarState state, int tokensLeft) {
    long[] expected = new long[masker.maskWords()];
    int left = state.remainingBytes();
    boolean complete = state.accepting();
    if (complete && (tokensLeft <= 1 || state.finished())) {
      expected[GrammarTesting.IM_END >>> 6] |= 1L << GrammarTesting.IM_END;
      return expected;
    }
    int budget = tokensLeft - 2;
    int limit = budget >= left ? budget : left - 1;
    long[] alive = new long[expected.length];
    int n = 0;
    for (int t = 0; t < GrammarTesting.QWEN3_VOCAB; t++) {
      byte[] bytes = masker.vocabulary().bytes(t);
      if (t == GrammarTesting.IM_END || bytes == null) {
        continue;
      }
      GrammarState s = state.copy();
      if (s.advance(bytes)) {
        alive[t >>> 6] |= 1L << t;
        if (s.remainingBytes() <= limit) {
          expected[t >>> 6] |= 1L << t;
          n++;
        }
      }
    }
    if (complete) {
      expected[GrammarTesting.IM_END >>> 6] |= 1L << GrammarTesting.IM_END;
      alive[GrammarTesting.IM_END >>> 6] |= 1L << GrammarTesting.IM_END;
      n++;
    }
    return n > 0 ? expected : alive;
  }
}
