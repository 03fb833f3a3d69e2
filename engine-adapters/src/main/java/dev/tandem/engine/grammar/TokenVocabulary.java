package dev.tandem.engine.grammar;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The bytes each token id stands for, read from a Hugging Face {@code tokenizer.json}: byte-level
 * BPE (GPT-2, Llama 3, Qwen: each character of a token maps back to one byte) or SentencePiece
 * style ({@code ▁} for a space, {@code <0xNN>} byte pieces). Special added tokens (and ids the
 * tokenizer does not define, such as a padded embedding) have no bytes: a grammar never allows
 * them; other added tokens stand for their text.
 *
 * <p>Immutable and thread-safe.
 */
public final class TokenVocabulary {
  private final byte[][] bytes;

  private TokenVocabulary(byte[][] bytes) {
    this.bytes = bytes;
  }

  public int size() {
    return bytes.length;
  }

  /** The token's bytes, or null if a grammar must never produce it. Not to be modified. */
  public byte[] bytes(int token) {
    return token >= 0 && token < bytes.length ? bytes[token] : null;
  }

  /** A vocabulary from explicit byte strings (tests). */
  static TokenVocabulary of(byte[][] bytes) {
    return new TokenVocabulary(bytes.clone());
  }

  /**
   * Reads {@code tokenizer.json}; {@code vocabSize} is the model's (its embedding may have more
   * rows than the tokenizer has tokens).
   *
   * @throws IllegalArgumentException naming {@code source} and the field when the file is not a
   *     tokenizer this reads
   */
  public static TokenVocabulary fromTokenizerJson(byte[] json, int vocabSize, String source) {
    // One streaming pass: model.vocab (token → id), added_tokens, and whether the decoder or
    // pre-tokenizer is byte-level; the merges (most of the file) are skipped, not built.
    java.util.Map<String, Integer> vocab = new java.util.HashMap<>(Math.max(16, vocabSize * 2));
    java.util.List<JsonNode> added = new java.util.ArrayList<>();
    String modelType = "?";
    boolean byteLevel = false;
    boolean sawVocab = false;
    ObjectMapper mapper = new ObjectMapper();
    try (com.fasterxml.jackson.core.JsonParser p = mapper.getFactory().createParser(json)) {
      if (p.nextToken() != com.fasterxml.jackson.core.JsonToken.START_OBJECT) {
        throw new IOException("not a JSON object");
      }
      while (p.nextToken() == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
        String top = p.currentName();
        p.nextToken();
        switch (top) {
          case "model" -> {
            if (p.currentToken() != com.fasterxml.jackson.core.JsonToken.START_OBJECT) {
              p.skipChildren();
              continue;
            }
            while (p.nextToken() == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
              String field = p.currentName();
              p.nextToken();
              if (field.equals("type")) {
                modelType = p.getText();
              } else if (field.equals("vocab") && p.currentToken() == com.fasterxml.jackson.core.JsonToken.START_OBJECT) {
                sawVocab = true;
                while (p.nextToken() == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
                  String token = p.currentName();
                  p.nextToken();
                  vocab.put(token, p.getValueAsInt(-1));
                }
              } else {
                p.skipChildren();
              }
            }
          }
          case "added_tokens" -> {
            JsonNode list = mapper.readTree(p);
            list.forEach(added::add);
          }
          case "decoder", "pre_tokenizer" -> byteLevel |= mentions(mapper.readTree(p), "ByteLevel");
          default -> p.skipChildren();
        }
      }
    } catch (IOException e) {
      throw new IllegalArgumentException(source + ": tokenizer.json is not JSON: " + e.getMessage(), e);
    }
    if (!sawVocab) {
      throw new IllegalArgumentException(
          source + ": tokenizer.json field model.vocab is not a token → id map (model type "
              + modelType + "; structured outputs need a BPE tokenizer)");
    }
    int[] unicodeToByte = byteLevel ? unicodeToByte() : null;
    byte[][] out = new byte[vocabSize][];
    for (Map.Entry<String, Integer> e : vocab.entrySet()) {
      int id = e.getValue();
      if (id >= 0 && id < vocabSize) {
        out[id] = byteLevel ? byteLevel(e.getKey(), unicodeToByte) : sentencePiece(e.getKey());
      }
    }
    for (JsonNode a : added) {
      int id = a.path("id").asInt(-1);
      if (id >= 0 && id < vocabSize) {
        out[id] = a.path("special").asBoolean(false) ? null : a.path("content").asText().getBytes(StandardCharsets.UTF_8);
      }
    }
    for (int i = 0; i < out.length; i++) {
      if (out[i] != null && out[i].length == 0) {
        out[i] = null;
      }
    }
    return new TokenVocabulary(out);
  }

  private static boolean mentions(JsonNode node, String type) {
    if (node.isObject()) {
      if (type.equals(node.path("type").asText())) {
        return true;
      }
      for (String list : new String[] {"decoders", "pretokenizers"}) {
        for (JsonNode n : node.path(list)) {
          if (mentions(n, type)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  private static byte[] byteLevel(String token, int[] unicodeToByte) {
    byte[] b = new byte[token.length()];
    for (int i = 0; i < token.length(); i++) {
      char c = token.charAt(i);
      int v = c < unicodeToByte.length ? unicodeToByte[c] : -1;
      if (v < 0) {
        return null; // not a byte-level token
      }
      b[i] = (byte) v;
    }
    return b;
  }

  private static byte[] sentencePiece(String token) {
    if (token.length() == 6 && token.startsWith("<0x") && token.endsWith(">")) {
      try {
        return new byte[] {(byte) Integer.parseInt(token.substring(3, 5), 16)};
      } catch (NumberFormatException e) {
        // a piece that merely looks like a byte
      }
    }
    if (token.startsWith("<") && token.endsWith(">") && token.length() > 2 && !token.contains("▁")) {
      return null; // control pieces such as <s>, <unk>
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] utf8 = token.replace('▁', ' ').getBytes(StandardCharsets.UTF_8);
    out.write(utf8, 0, utf8.length);
    return out.toByteArray();
  }

  /** GPT-2's bytes_to_unicode, inverted: printable bytes stand for themselves, the rest for 256+n. */
  private static int[] unicodeToByte() {
    int[] map = new int[512];
    java.util.Arrays.fill(map, -1);
    int n = 0;
    for (int b = 0; b < 256; b++) {
      boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      if (printable) {
        map[b] = b;
      } else {
        map[256 + n++] = b;
      }
    }
    return map;
  }
}
