package dev.tandem.frontend.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.ModelFiles;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The real Qwen3 tokenizer; ids from ../shared/models/qwen3-tokenizer/README.md. */
class TextTokenizerTest {
  private static final TextTokenizer QWEN3 =
      TextTokenizer.fromJson(ModelFiles.bundledQwen3().tokenizerJson(), "qwen3");

  @AfterAll
  static void close() {
    QWEN3.close();
  }

  @Test
  void encodesKnownTextAsHuggingFaceDoes() {
    assertArrayEquals(new int[] {9707, 11, 847, 5562, 374, 18838}, QWEN3.encode("Hello, my dog is cute", false));
    assertArrayEquals(new int[] {151644, 872, 198, 6023, 151645}, QWEN3.encode("<|im_start|>user\nhi<|im_end|>", false));
  }

  /**
   * Tricky text, ids pinned. Each was checked against a second, independent implementation:
   * llama.cpp's BPE tokenizer (qwen2 pre-tokenizer) on the same vocabulary and merges, exported by
   * {@code tandem model export-gguf}. They agree on all but NFC, which llama.cpp does not apply and
   * Hugging Face's Qwen2 tokenizer does (its normalizer is NFC): "e" + U+0301 becomes "é".
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.MethodSource("trickyTexts")
  void pinsTokenIdsOfTrickyText(String text, int[] ids) {
    assertArrayEquals(ids, QWEN3.encode(text, false), text);
    assertEquals(java.text.Normalizer.normalize(text, java.text.Normalizer.Form.NFC), QWEN3.decode(ids, false));
  }

  static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> trickyTexts() {
    return java.util.stream.Stream.of(
        org.junit.jupiter.params.provider.Arguments.of("東京タワーは高さ333メートルです。北京欢迎你！",
            new int[] {102356, 46553, 46207, 125980, 15322, 44636, 29713, 18, 18, 18, 38750, 83377, 32610, 37541, 1773, 68990, 100437, 56568, 6313}),
        org.junit.jupiter.params.provider.Arguments.of("Thumbs 👍🏽 family 👨‍👩‍👧 flag 🇨🇭 done",
            new int[] {1001, 15775, 61804, 235, 145375, 2997, 61804, 101, 378, 235, 145233, 378, 235, 145665, 5181, 11162, 229, 101, 146000, 2814}),
        org.junit.jupiter.params.provider.Arguments.of("I'll say we've done it, don't you think? They're here.",
            new int[] {40, 3278, 1977, 582, 3003, 2814, 432, 11, 1513, 944, 498, 1744, 30, 2379, 2299, 1588, 13}),
        org.junit.jupiter.params.provider.Arguments.of("Call 0800123456789 or 3.14159 now, year 2026",
            new int[] {7220, 220, 15, 23, 15, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 476, 220, 18, 13, 16, 19, 16, 20, 24, 1431, 11, 1042, 220, 17, 15, 17, 21}),
        org.junit.jupiter.params.provider.Arguments.of("a   b\n\n\n\tc  \t  d    ", new int[] {64, 256, 293, 1406, 1444, 78099, 294, 257}),
        org.junit.jupiter.params.provider.Arguments.of("before<|im_end|>after <|im_start|>user", new int[] {14801, 151645, 10694, 220, 151644, 872}),
        org.junit.jupiter.params.provider.Arguments.of("Cafe\u0301 and Café", new int[] {34, 2577, 963, 323, 65671}),
        org.junit.jupiter.params.provider.Arguments.of("naïve façade Zürich São Paulo", new int[] {3376, 37572, 586, 94872, 1021, 1863, 5186, 713, 47690, 36926}));
  }

  @Test
  void decodeRoundTripsAndCanSkipSpecialTokens() {
    String text = "<|im_start|>user\nZürich 東京 👍🏽<|im_end|>";
    int[] ids = QWEN3.encode(text, false);
    assertEquals(text, QWEN3.decode(ids, false));
    assertEquals("user\nZürich 東京 👍🏽", QWEN3.decode(ids, true));
  }

  @Test
  void incrementalDetokenizerNeverEmitsHalfACharacter() {
    String text = "Emoji 👍🏽 and 東京, then 🧑‍🚀 done";
    int[] ids = QWEN3.encode(text, false);
    IncrementalDetokenizer d = new IncrementalDetokenizer(QWEN3, new int[0], false);
    StringBuilder out = new StringBuilder();
    for (int id : ids) {
      String delta = d.add(id);
      assertFalse(delta.contains("\uFFFD"), "partial character in delta " + delta);
      out.append(delta);
    }
    out.append(d.flush());
    assertEquals(text, out.toString());
    assertTrue(ids.length > text.codePointCount(0, text.length()) / 2, "multi-token characters present");
  }

  @Test
  void incrementalDetokenizerKeepsLeadingSpaceAfterPromptContext() {
    int[] prompt = QWEN3.encode("The answer is", false);
    int[] gen = QWEN3.encode(" forty two", false);
    IncrementalDetokenizer d = new IncrementalDetokenizer(QWEN3, prompt, false);
    StringBuilder out = new StringBuilder();
    for (int id : gen) {
      out.append(d.add(id));
    }
    assertEquals(" forty two", out.toString());
  }

  @Test
  void invalidTokenizerJsonNamesTheSource() {
    var e = assertThrows(IllegalArgumentException.class,
        () -> TextTokenizer.fromJson("{\"model\": 1}".getBytes(StandardCharsets.UTF_8), "/m/x"));
    assertTrue(e.getMessage().startsWith("/m/x: tokenizer.json"), e.getMessage());
  }

  @Test
  void stopStringsHoldBackPossiblePrefixesAndCutAtTheMatch() {
    StopStrings s = new StopStrings(List.of("STOP", "\n\n"));
    assertEquals("ab", s.add("abST"));
    assertEquals("", s.add("O"));
    assertEquals("STOx", s.add("x"));
    assertEquals("yz", s.add("yzSTOP and more"));
    assertTrue(s.stopped());
    assertEquals("", s.add("later"));
    StopStrings none = new StopStrings(List.of());
    assertEquals("abc", none.add("abc"));
  }

  @Test
  void beforeMinTokensAStopStringStopsNothingButOneEndingAfterDoes() {
    StopStrings s = new StopStrings(List.of("STOP"));
    assertEquals("a STOP b ", s.add("a STOP b ST", false), "ends before min_tokens: not a stop; a possible start held back");
    assertEquals("", s.add("O", false));
    assertEquals("", s.add("P!", true), "began before min_tokens, ends after: a stop, as vLLM checks it");
    assertTrue(s.stopped());
    StopStrings kept = new StopStrings(List.of("STOP", "\n\n"), true);
    assertEquals("ab", kept.add("abST"));
    assertEquals("STOP", kept.add("OP and more"), "include_stop_str_in_output: the text ends with the stop string");
    assertTrue(kept.stopped());
    StopStrings later = new StopStrings(List.of("xx"));
    assertEquals("ax", later.add("axx", false), "'xx' written before min_tokens; its last 'x' held back");
    assertEquals("xb", later.add("bxx", true));
    assertTrue(later.stopped());
  }

  @Test
  void theLongestTokenBoundsHowManyCharactersATokenCovers() {
    // Qwen3's longest entries are 128 characters (runs of spaces); its longest added token is shorter.
    assertEquals(128, QWEN3.longestTokenChars());
  }
}
