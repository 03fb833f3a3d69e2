package dev.tandem.frontend.openai;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The pre-encoded content events are byte for byte the events the JSON tree gives. */
class ContentChunksTest {
  /** What {@code SseWriter.event} writes for {@link ResponseJson#chunk} with this text. */
  private static String viaTree(GenerationSpec.Kind kind, String id, long created, String model, int index, String text, boolean usage) {
    ObjectNode n = ResponseJson.chunk(kind, id, created, model, index, null, text, null);
    if (usage) {
      n.putNull("usage");
    }
    return "data: " + new String(ResponseJson.bytes(n), StandardCharsets.UTF_8) + "\n\n";
  }

  private static String viaChunks(ContentChunks chunks, int index, String text) {
    ByteBuf buf = Unpooled.buffer(4);
    chunks.write(buf, index, text);
    return buf.toString(StandardCharsets.UTF_8);
  }

  private static final String[] PIECES = {
    "a", "Z", " ", "hello", "\"", "\\", "/", "\n", "\r", "\t", "\b", "\f", "\u0000", "\u0001", "\u001f", "\u007f",
    "é", "ß", "中文", "\u2028", "\u2029", "\uFFFD", "😀", "\uD83E\uDD16", "{\"a\":1}", "</script>", "%s", "\u00a0", "\uD800", "\uDFFF", "\uDE00x"
  };

  private static String randomText(Random r) {
    StringBuilder b = new StringBuilder();
    int n = r.nextInt(6);
    for (int i = 0; i < n; i++) {
      b.append(PIECES[r.nextInt(PIECES.length)]);
    }
    return b.toString();
  }

  @Test
  void everyEventIsWhatTheTreeWrites() {
    Random r = new Random(7);
    for (GenerationSpec.Kind kind : GenerationSpec.Kind.values()) {
      for (boolean usage : new boolean[] {false, true}) {
        String id = kind == GenerationSpec.Kind.CHAT ? "chatcmpl-\"x\\y" : "cmpl-42";
        String model = "Qwen/Qwen3-0.6B \u00e9";
        ContentChunks chunks = new ContentChunks(kind, id, 1_767_225_600L, model, usage);
        for (int i = 0; i < 2_000; i++) {
          String text = randomText(r);
          int index = i % 7 == 0 ? r.nextInt(1_000) : r.nextInt(3);
          assertEquals(viaTree(kind, id, 1_767_225_600L, model, index, text, usage), viaChunks(chunks, index, text),
              () -> kind + " usage=" + usage + " text=" + escape(text));
        }
      }
    }
  }

  @Test
  void theEventParsesBackToItsText() throws Exception {
    ContentChunks chunks = new ContentChunks(GenerationSpec.Kind.CHAT, "chatcmpl-1", 1, "m", true);
    String text = "line one\nsaid \"hi\" \\ \u0007 😀";
    String event = viaChunks(chunks, 2, text);
    JsonNode n = ResponseJson.JSON.readTree(event.substring("data: ".length()));
    assertEquals(text, n.path("choices").path(0).path("delta").path("content").asText());
    assertEquals(2, n.path("choices").path(0).path("index").asInt());
    assertEquals("chat.completion.chunk", n.path("object").asText());
    assertEquals(true, n.has("usage") && n.get("usage").isNull());
  }

  private static String escape(String s) {
    StringBuilder b = new StringBuilder();
    s.chars().forEach(c -> b.append(c < 0x20 || c > 0x7e ? String.format("\\u%04x", c) : String.valueOf((char) c)));
    return b.toString();
  }
}
