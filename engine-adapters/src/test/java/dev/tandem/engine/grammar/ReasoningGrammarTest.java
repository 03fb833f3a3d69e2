package dev.tandem.engine.grammar;

import static dev.tandem.engine.grammar.GrammarTesting.matches;
import static dev.tandem.engine.grammar.GrammarTesting.prefix;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.StructuredOutput;
import dev.tandem.common.StructuredOutput.Reasoning;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A constraint after a reasoning model's free reasoning: any text up to the first closing tag,
 * then at most two newlines, then the constrained output — checked byte by byte against a
 * reference built on {@link String#indexOf}, and against the masker's budget.
 */
class ReasoningGrammarTest {
  private static final Reasoning QWEN3 = new Reasoning("<think>", "</think>", false);
  private static final Reasoning OPENED = new Reasoning("<think>", "</think>", true);
  private static final String SCHEMA = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]}";

  @Test
  void theOutputMayReasonFirstOrGoStraightToTheValue() {
    Grammar g = OutputGrammars.compile(StructuredOutput.jsonSchema(SCHEMA).withReasoning(QWEN3));
    assertTrue(matches(g, "<think>\nLet me see: a is 1.\n</think>\n\n{\"a\":1}"));
    assertTrue(matches(g, "<think></think>{\"a\":1}"));
    assertTrue(matches(g, "{\"a\":1}"), "the reasoning is optional where the output would open it");
    assertTrue(matches(g, "<think>{\"a\":2} is not it; <think> nests nothing</think>{\"a\":1}"),
        "inside the reasoning anything goes, JSON and the opening tag included");
    assertFalse(matches(g, "<think>done</think>\n\n\n{\"a\":1}"), "at most two newlines after it");
    assertFalse(prefix(g, "<think>done</think>Sure! {"), "the value follows the reasoning");
    assertFalse(prefix(g, "Sure! <think>"), "the reasoning opens the output or not at all");
    assertFalse(matches(g, "<think>{\"a\":1}"), "the reasoning must be closed");
    assertFalse(matches(g, "{\"a\":1}</think>"));

    GrammarState s = g.newState();
    assertTrue(s.advance("<think>a long thought </th".getBytes(StandardCharsets.UTF_8)));
    assertEquals("ink>".length() + "{\"a\":0}".length(), s.remainingBytes(), "the tag's rest, then the shortest value");
  }

  @Test
  void anOpenedReasoningRunsFromTheFirstByte() {
    Grammar g = OutputGrammars.compile(StructuredOutput.choice("[\"yes\",\"no\"]").withReasoning(OPENED));
    assertTrue(matches(g, "Hmm, yes or no? Probably yes.\n</think>\n\nyes"));
    assertTrue(matches(g, "</think>no"));
    assertFalse(matches(g, "yes"), "the output starts inside the reasoning: it must be closed first");
    assertFalse(matches(g, "x</think>maybe"));
    assertFalse(matches(g, "x</think>yes</think>"), "only the first closing tag ends the reasoning");
    assertEquals("</think>no", g.shortestExample());
  }

  @Test
  void theFirstClosingTagEndsTheReasoningWhereverItOverlapsItself() {
    // Tags that overlap themselves ("abab", "aab") exercise the matcher's fallback states: each
    // random text over a small alphabet is accepted exactly when the text after the tag's first
    // occurrence is what the body allows.
    SplittableRandom random = new SplittableRandom(11);
    for (String close : new String[] {"abab", "aab", "</think>", "aa"}) {
      Grammar g = OutputGrammars.compile(StructuredOutput.regex("b[ab]?").withReasoning(new Reasoning("", close, true)));
      String alphabet = close.equals("</think>") ? "</thinkab\n" : "ab\n";
      for (int i = 0; i < 4000; i++) {
        StringBuilder text = new StringBuilder();
        int length = random.nextInt(14);
        for (int k = 0; k < length; k++) {
          text.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        String t = text.toString();
        int at = t.indexOf(close);
        boolean expected = at >= 0 && t.substring(at + close.length()).matches("\n{0,2}b[ab]?");
        assertEquals(expected, matches(g, t), () -> "'" + close + "' over " + t.replace("\n", "\\n"));
        boolean expectedPrefix = at < 0 || t.substring(at + close.length()).matches("\n{0,2}(b[ab]?)?");
        assertEquals(expectedPrefix, prefix(g, t), () -> "prefix: '" + close + "' over " + t.replace("\n", "\\n"));
      }
    }
  }

  @Test
  void theBudgetClosesAReasoningThatWouldNotEndInTime() {
    // The masker offers only tokens that leave room to close the reasoning and write the value:
    // a random "model" that would ramble on forever still ends within its tokens with a valid value.
    TokenMasker masker = GrammarTesting.qwen3();
    Grammar g = OutputGrammars.compile(StructuredOutput.jsonSchema(SCHEMA).withReasoning(OPENED));
    int[] ends = {GrammarTesting.IM_END};
    long[] mask = new long[masker.maskWords()];
    for (int seed = 0; seed < 6; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      GrammarState state = g.newState();
      StringBuilder out = new StringBuilder();
      int budget = 24;
      boolean ended = false;
      for (int left = budget; left > 0 && !ended; left--) {
        int n = masker.mask(state, left, ends, mask);
        assertTrue(n > 0, "a way forward after " + out);
        int token = GrammarTesting.pick(mask, n, random);
        if (token == GrammarTesting.IM_END) {
          ended = true;
        } else {
          byte[] bytes = masker.vocabulary().bytes(token);
          assertTrue(state.advance(bytes));
          out.append(new String(bytes, StandardCharsets.UTF_8));
        }
      }
      assertTrue(ended, () -> "no end within the budget: " + out);
      String text = out.toString();
      int close = text.indexOf("</think>");
      assertTrue(close >= 0 && text.substring(close + "</think>".length()).matches("\n{0,2}\\{\\s*\"a\"\\s*:\\s*-?\\d+\\s*\\}"), text);
    }
  }

  @Test
  void insideTheReasoningEveryTokenButTheSpecialOnesIsAllowed() {
    TokenMasker masker = GrammarTesting.qwen3();
    GrammarState state = OutputGrammars.compile(StructuredOutput.jsonSchema(SCHEMA).withReasoning(OPENED)).newState();
    assertTrue(state.advance("Let me think".getBytes(StandardCharsets.UTF_8)));
    long[] mask = new long[masker.maskWords()];
    int allowed = masker.mask(state, 4096, new int[] {GrammarTesting.IM_END}, mask);
    int withBytes = 0;
    for (int t = 0; t < GrammarTesting.QWEN3_VOCAB; t++) {
      if (masker.vocabulary().bytes(t) != null) {
        withBytes++;
      }
    }
    assertEquals(withBytes, allowed, "every token with text, and no end of sequence before the value");
    int thinkEnd = 151_668; // "</think>", one token in Qwen3's vocabulary
    assertTrue((mask[thinkEnd >>> 6] & (1L << thinkEnd)) != 0);
    assertTrue((mask[GrammarTesting.IM_END >>> 6] & (1L << GrammarTesting.IM_END)) == 0);
  }
}
