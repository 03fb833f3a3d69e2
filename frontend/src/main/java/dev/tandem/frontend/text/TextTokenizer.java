package dev.tandem.frontend.text;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.Map;

/**
 * A Hugging Face {@code tokenizer.json}, run by the HF tokenizers library (through DJL's binding,
 * which bundles its native library). Exact HF semantics: byte-level BPE, added and special tokens,
 * normalizers.
 *
 * <p>Thread-safe (the native tokenizer is immutable after loading).
 */
public final class TextTokenizer implements AutoCloseable {
  static {
    // DJL otherwise calls an EC2 metadata address at class load; this machine talks to no one.
    System.setProperty("OPT_OUT_TRACKING", "true");
    System.setProperty("ai.djl.offline", "true");
  }

  private final HuggingFaceTokenizer tokenizer;
  private final java.util.concurrent.ConcurrentHashMap<String, Integer> specialTokenIds = new java.util.concurrent.ConcurrentHashMap<>();
  private byte[] json; // kept to find the longest token when first asked, then dropped
  private volatile int longestToken; // 0 until computed

  private TextTokenizer(HuggingFaceTokenizer tokenizer, byte[] json) {
    this.tokenizer = tokenizer;
    this.json = json;
  }

  /**
   * The most characters of text one token can stand for (at least 1): a text of n characters
   * has at least n ÷ this many tokens, which bounds a prompt's length before it is tokenized.
   */
  public int longestTokenChars() {
    int l = longestToken;
    if (l == 0) {
      synchronized (this) {
        if (longestToken == 0) {
          try {
            longestToken = longestToken(json);
          } catch (IOException e) {
            throw new IllegalStateException("tokenizer.json could not be read again", e);
          }
          json = null;
        }
        l = longestToken;
      }
    }
    return l;
  }

  /** The longest vocabulary entry or added token, in characters, read without building a tree. */
  private static int longestToken(byte[] json) throws IOException {
    int longest = 1;
    try (com.fasterxml.jackson.core.JsonParser p = new com.fasterxml.jackson.core.JsonFactory().createParser(json)) {
      String section = null;
      int depth = 0;
      for (var t = p.nextToken(); t != null; t = p.nextToken()) {
        switch (t) {
          case START_OBJECT, START_ARRAY -> depth++;
          case END_OBJECT, END_ARRAY -> depth--;
          case FIELD_NAME -> {
            String name = p.currentName();
            if (depth == 1) {
              section = name;
            } else if (depth == 3 && "model".equals(section) && "vocab".equals(p.getParsingContext().getParent().getCurrentName())) {
              longest = Math.max(longest, name.length());
            } else if (depth == 3 && "added_tokens".equals(section) && name.equals("content")) {
              p.nextToken();
              longest = Math.max(longest, p.getText().length());
            }
          }
          default -> { }
        }
      }
    }
    return longest;
  }

  /**
   * @throws IllegalArgumentException naming the source if the JSON is not a tokenizer the library
   *     accepts
   */
  public static TextTokenizer fromJson(byte[] tokenizerJson, String source) {
    try {
      return new TextTokenizer(
          HuggingFaceTokenizer.newInstance(
              new ByteArrayInputStream(tokenizerJson),
              Map.of("addSpecialTokens", "false", "truncation", "false", "padding", "false")),
          tokenizerJson);
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          source + ": tokenizer.json cannot be loaded: " + e.getMessage(), e);
    }
  }

  /**
   * The id of the special token whose text is {@code text} (one that decoding with special tokens
   * skipped drops), or -1 when the text is no such token.
   */
  public int specialTokenId(String text) {
    return specialTokenIds.computeIfAbsent(text, t -> {
      int[] ids = encode(t, false);
      return ids.length == 1 && decode(ids, true).isEmpty() && decode(ids, false).equals(t) ? ids[0] : -1;
    });
  }

  /** Token ids of {@code text}; special tokens written in the text are recognised. */
  public int[] encode(String text, boolean addSpecialTokens) {
    return ints(tokenizer.encode(text, addSpecialTokens, false).getIds());
  }

  private static int[] ints(long[] ids) {
    int[] out = new int[ids.length];
    for (int i = 0; i < ids.length; i++) {
      out[i] = (int) ids[i];
    }
    return out;
  }

  public String decode(int[] ids, int from, int to, boolean skipSpecialTokens) {
    long[] l = new long[to - from];
    for (int i = from; i < to; i++) {
      l[i - from] = ids[i] & 0xFFFFFFFFL;
    }
    return tokenizer.decode(l, skipSpecialTokens);
  }

  public String decode(int[] ids, boolean skipSpecialTokens) {
    return decode(ids, 0, ids.length, skipSpecialTokens);
  }

  @Override
  public void close() {
    tokenizer.close();
  }
}
