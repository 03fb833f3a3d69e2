package dev.tandem.engine.grammar;

import dev.tandem.engine.ModelFiles;
import java.nio.charset.StandardCharsets;

/** Shared fixtures: the real Qwen3 vocabulary, and matching whole strings. */
final class GrammarTesting {
  static final int QWEN3_VOCAB = 151_936;
  static final int IM_END = 151_645;
  private static TokenMasker qwen;

  private GrammarTesting() {}

  /** A masker over the bundled Qwen3 tokenizer (built once: about a second). */
  static synchronized TokenMasker qwen3() {
    if (qwen == null) {
      qwen = new TokenMasker(TokenVocabulary.fromTokenizerJson(
          ModelFiles.bundledQwen3().tokenizerJson(), QWEN3_VOCAB, "bundled Qwen3 tokenizer"));
    }
    return qwen;
  }

  /** A uniformly random one of the {@code n} tokens set in {@code mask}. */
  static int pick(long[] mask, int n, java.util.SplittableRandom random) {
    int k = random.nextInt(n);
    for (int w = 0; w < mask.length; w++) {
      int c = Long.bitCount(mask[w]);
      if (k < c) {
        long word = mask[w];
        for (int i = 0; i < k; i++) {
          word &= word - 1;
        }
        return w * 64 + Long.numberOfTrailingZeros(word);
      }
      k -= c;
    }
    throw new AssertionError("k beyond the mask");
  }

  /** True if {@code text} is a complete output of {@code grammar}. */
  static boolean matches(Grammar grammar, String text) {
    GrammarState s = grammar.newState();
    return s.advance(text.getBytes(StandardCharsets.UTF_8)) && s.accepting();
  }

  /** True if {@code text} can still be continued into an output of {@code grammar}. */
  static boolean prefix(Grammar grammar, String text) {
    return grammar.newState().advance(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Asserts that each of {@code texts} is a complete output of {@code grammar}, naming the one that is not. */
  static void assertMatch(Grammar grammar, String... texts) {
    for (String t : texts) {
      org.junit.jupiter.api.Assertions.assertTrue(matches(grammar, t), t);
    }
  }

  /** Asserts that none of {@code texts} is a complete output of {@code grammar}, naming the one that is. */
  static void assertNoMatch(Grammar grammar, String... texts) {
    for (String t : texts) {
      org.junit.jupiter.api.Assertions.assertFalse(matches(grammar, t), t);
    }
  }
}
