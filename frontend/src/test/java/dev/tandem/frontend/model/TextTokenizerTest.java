package dev.tandem.frontend.model;

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
}
