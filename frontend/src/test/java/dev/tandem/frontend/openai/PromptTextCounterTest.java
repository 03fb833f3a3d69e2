package dev.tandem.frontend.openai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The streaming count of prompt characters, against hand-counted bodies, fed in any split. */
class PromptTextCounterTest {
  private static PromptTextCounter fed(String body, int chunk) {
    PromptTextCounter c = new PromptTextCounter();
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < b.length; i += chunk) {
      for (int j = i; j < Math.min(b.length, i + chunk); j++) {
        c.accept(b[j]);
      }
    }
    return c;
  }

  private static void assertCount(long expected, String param, String body) {
    for (int chunk : new int[] {1, 3, 7, 1 << 20}) {
      PromptTextCounter c = fed(body, chunk);
      assertEquals(expected, c.chars(), body + " in chunks of " + chunk);
      if (expected > 0) {
        assertEquals(param, c.param());
      }
    }
  }

  @Test
  void countsOnlyMessageContentAndPromptStrings() {
    assertCount(5 + 3, "messages", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"},{\"role\":\"assistant\",\"content\":\"abc\"}]}");
    assertCount(2 + 4, "messages", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"text\",\"text\":\"four\"}]}]}");
    assertCount(6, "prompt", "{\"prompt\":\"abcdef\",\"max_tokens\":3,\"stop\":[\"zzzzzzzzzz\"]}");
    assertCount(3, "prompt", "{\"prompt\":[\"a\",\"bc\"]}");
    // Not prompt text: the model name, roles, tools, schemas, stop strings, metadata.
    assertCount(0, "", "{\"model\":\"a-very-long-name\",\"stop\":[\"content\"],\"metadata\":{\"content\":\"xxxxxxxx\"},"
        + "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"description\":\"yyyyyyyy\"}}}}");
  }

  @Test
  void escapesAndMultiByteCharactersCountOnce() {
    // \n, \", \\ and \u00e9 are one character each; é (2 bytes), 中 (3) and 😀 (4) one code point each.
    assertCount(4, "messages", "{\"messages\":[{\"content\":\"\\n\\\"\\\\\\u00e9\"}]}");
    assertCount(3, "messages", "{\"messages\":[{\"content\":\"é中😀\"}]}");
    // A key or a string holding structure characters does not confuse the count.
    assertCount(7, "messages", "{\"messages\":[{\"name\":\"{[,:]}\",\"content\":\"a{b}[c]\"}]}");
  }

  @Test
  void aTopLevelTruncatePromptTokensIsNoticed() {
    assertTrue(fed("{\"truncate_prompt_tokens\":10,\"prompt\":\"abc\"}", 1).truncates());
    assertTrue(fed("{\"prompt\":\"abc\",\"truncate_prompt_tokens\":10}", 5).truncates());
    assertFalse(fed("{\"prompt\":\"truncate_prompt_tokens\"}", 1).truncates(), "a value, not a key");
    assertFalse(fed("{\"metadata\":{\"truncate_prompt_tokens\":1},\"prompt\":\"abc\"}", 1).truncates(), "not at the top level");
    assertFalse(fed("{\"truncate_prompt_tokens_x\":1}", 1).truncates());
  }
}
