package dev.tandem.frontend.text;

import java.util.Arrays;

/**
 * Turns a growing list of token ids into text deltas that never split a UTF-8 character: each call
 * decodes a short window of recent tokens and emits only text that is complete (a byte-level BPE
 * token may hold part of a character, which decodes to U+FFFD until the rest arrives). The method
 * is vLLM's prefix/read offsets. Special tokens a parser needs to see ({@code kept}) keep their
 * text even when special tokens are skipped.
 *
 * <p>Not thread-safe: one per generated sequence.
 */
public final class IncrementalDetokenizer {
  private static final int CONTEXT_TOKENS = 5;

  private final TextTokenizer tokenizer;
  private final boolean skipSpecialTokens;
  private final int[] kept;
  private int[] ids = new int[64];
  private int length;
  private int prefixOffset;
  private int readOffset;

  /**
   * @param promptTail the last few prompt tokens, decoded as context (may be empty)
   */
  public IncrementalDetokenizer(TextTokenizer tokenizer, int[] promptTail, boolean skipSpecialTokens) {
    this(tokenizer, promptTail, skipSpecialTokens, new int[0]);
  }

  /**
   * @param kept special tokens whose text is output even when {@code skipSpecialTokens} (a
   *     tool-call format's markers)
   */
  public IncrementalDetokenizer(TextTokenizer tokenizer, int[] promptTail, boolean skipSpecialTokens, int[] kept) {
    this.tokenizer = tokenizer;
    this.skipSpecialTokens = skipSpecialTokens;
    this.kept = skipSpecialTokens ? kept.clone() : new int[0];
    int start = Math.max(0, promptTail.length - CONTEXT_TOKENS);
    for (int i = start; i < promptTail.length; i++) {
      push(promptTail[i]);
    }
    prefixOffset = 0;
    readOffset = length;
  }

  private void push(int id) {
    if (length == ids.length) {
      ids = Arrays.copyOf(ids, length * 2);
    }
    ids[length++] = id;
  }

  /** Adds one token; returns the text it completes (possibly empty). */
  public String add(int id) {
    for (int k : kept) {
      if (k == id) {
        // Whatever was held back, then the token's own text; the next window starts after it.
        String before = flush();
        push(id);
        prefixOffset = length;
        readOffset = length;
        return before + tokenizer.decode(new int[] {id}, false);
      }
    }
    push(id);
    String prefix = tokenizer.decode(ids, prefixOffset, readOffset, skipSpecialTokens);
    String full = tokenizer.decode(ids, prefixOffset, length, skipSpecialTokens);
    if (full.length() > prefix.length() && !full.endsWith("\uFFFD")) {
      String delta = full.substring(prefix.length());
      prefixOffset = readOffset;
      readOffset = length;
      return delta;
    }
    return "";
  }

  /** Text still held back at the end (an incomplete character), decoded as is. */
  public String flush() {
    if (readOffset == length) {
      return "";
    }
    String prefix = tokenizer.decode(ids, prefixOffset, readOffset, skipSpecialTokens);
    String full = tokenizer.decode(ids, prefixOffset, length, skipSpecialTokens);
    readOffset = length;
    return full.length() > prefix.length() ? full.substring(prefix.length()) : "";
  }
}
