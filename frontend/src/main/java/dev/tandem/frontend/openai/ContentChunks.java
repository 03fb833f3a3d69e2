package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * The streamed content events of one response, {@code data: {…}\n\n}, written straight into a
 * buffer: the bytes before and after a chunk's text are encoded once per response, so that a token
 * costs its text's escaping and nothing else — no JSON tree, no intermediate arrays. Byte for byte
 * what {@link ResponseJson#chunk} gives for a content chunk (no role, no finish reason, no
 * logprobs), with {@code "usage":null} last when the stream includes usage (tested against it).
 *
 * <p>Immutable; shared by the choices of one response.
 */
public final class ContentChunks {
  private static final byte[] HEX = "0123456789ABCDEF".getBytes(StandardCharsets.US_ASCII);

  private final byte[] head;
  private final byte[] middle;
  private final byte[] tail;

  /** For a response of {@code kind} with these envelope fields; {@code usageNull} as {@code include_usage}. */
  public ContentChunks(GenerationSpec.Kind kind, String id, long created, String model, boolean usageNull) {
    // The envelope as the tree writes it, cut where the index and the text go.
    ObjectNode sample = ResponseJson.chunk(kind, id, created, model, 0, null, "", null);
    if (usageNull) {
      sample.putNull("usage");
    }
    String json = new String(ResponseJson.bytes(sample), StandardCharsets.UTF_8);
    String index = "\"index\":0";
    String text = kind == GenerationSpec.Kind.CHAT ? "\"content\":\"\"" : "\"text\":\"\"";
    int i = json.indexOf(index);
    int t = json.indexOf(text, i);
    if (i < 0 || t < 0) {
      throw new IllegalStateException("unexpected chunk layout: " + json);
    }
    head = ("data: " + json.substring(0, i + index.length() - 1)).getBytes(StandardCharsets.UTF_8);
    middle = json.substring(i + index.length(), t + text.length() - 2).getBytes(StandardCharsets.UTF_8);
    tail = (json.substring(t + text.length()) + "\n\n").getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Bytes the event of {@code text} usually takes at most: the fixed parts, an index of up to ten
   * digits, the quotes, and three UTF-8 bytes a character (escapes may take more; the buffer grows).
   */
  public int sizeHint(String text) {
    return head.length + middle.length + tail.length + 10 + 2 + 3 * text.length();
  }

  /** Writes the event of choice {@code index} carrying {@code text} to {@code out}. */
  public void write(ByteBuf out, int index, String text) {
    out.writeBytes(head);
    writeInt(out, index);
    out.writeBytes(middle);
    writeQuoted(out, text);
    out.writeBytes(tail);
  }

  private static void writeInt(ByteBuf out, int v) {
    if (v < 10 && v >= 0) {
      out.writeByte('0' + v);
    } else {
      out.writeCharSequence(Integer.toString(v), StandardCharsets.US_ASCII);
    }
  }

  /**
   * {@code "text"} escaped as Jackson's UTF-8 generator escapes it: quote, backslash and control
   * characters (the short forms where JSON has them, else {@code \}{@code u00XX}), and every
   * surrogate, paired or not, as its own {@code \}{@code uXXXX}; everything else as UTF-8.
   */
  static void writeQuoted(ByteBuf out, String text) {
    out.writeByte('"');
    int n = text.length();
    int run = 0; // start of the characters not written yet that need no escape
    for (int k = 0; k < n; k++) {
      char c = text.charAt(k);
      if (c >= 0x20 && c != '"' && c != '\\' && !Character.isSurrogate(c)) {
        continue;
      }
      if (k > run) {
        out.writeCharSequence(text.subSequence(run, k), StandardCharsets.UTF_8);
      }
      run = k + 1;
      out.writeByte('\\');
      switch (c) {
        case '"', '\\' -> out.writeByte(c);
        case '\b' -> out.writeByte('b');
        case '\t' -> out.writeByte('t');
        case '\n' -> out.writeByte('n');
        case '\f' -> out.writeByte('f');
        case '\r' -> out.writeByte('r');
        default -> { // a control character, or half of a surrogate pair
          out.writeByte('u');
          out.writeByte(HEX[c >> 12]);
          out.writeByte(HEX[(c >> 8) & 0xF]);
          out.writeByte(HEX[(c >> 4) & 0xF]);
          out.writeByte(HEX[c & 0xF]);
        }
      }
    }
    if (n > run) {
      out.writeCharSequence(run == 0 ? text : text.subSequence(run, n), StandardCharsets.UTF_8);
    }
    out.writeByte('"');
  }
}
