package dev.tandem.frontend.openai;

/**
 * Counts, byte by byte as a request body arrives, the characters of its prompt text — the string
 * values of {@code messages[].content} (and content parts' {@code text}) and of {@code prompt} —
 * without building anything, so that a prompt too long for the context window can be refused
 * before the rest of the body is even read. The same fields {@link
 * RequestParser#refuseIfPromptCannotFit} counts on a whole body; code points are counted (one per
 * UTF-8 lead byte, one per escape), a lower bound on the characters a tokenizer sees.
 *
 * <p>Not a validator: on a body that is not JSON the count means nothing, and the parser refuses
 * the body later. Not thread-safe: one body, fed in order (a connection's event loop).
 */
public final class PromptTextCounter {
  private static final int MAX_DEPTH = 128;
  private static final int MAX_KEY = 24;

  private enum State { VALUE, STRING, ESCAPE, UNICODE }

  private final boolean[] object = new boolean[MAX_DEPTH + 1];
  private final String[] keyAt = new String[MAX_DEPTH + 1];
  private final boolean[] expectKey = new boolean[MAX_DEPTH + 1];
  private final StringBuilder key = new StringBuilder(MAX_KEY);
  private int depth;
  private State state = State.VALUE;
  private boolean inKey;
  private boolean counting;
  private int unicodeLeft;
  private long chars;
  private boolean messages;
  private boolean truncates;

  /** Feeds one byte; always true (continue), so that it serves as a byte processor. */
  public boolean accept(byte b) {
    switch (state) {
      case VALUE -> value(b);
      case STRING -> string(b);
      case ESCAPE -> {
        if (b == 'u') {
          state = State.UNICODE;
          unicodeLeft = 4;
        } else {
          state = State.STRING;
        }
        count(b);
      }
      case UNICODE -> {
        if (--unicodeLeft == 0) {
          state = State.STRING;
        }
      }
    }
    return true;
  }

  /** Prompt characters seen so far. */
  public long chars() {
    return chars;
  }

  /**
   * Whether the body has named vLLM's {@code truncate_prompt_tokens} so far: then its prompt may be
   * longer than the window, and only the parsed request can say whether what it keeps fits.
   */
  public boolean truncates() {
    return truncates;
  }

  /** The parameter the counted text belongs to, for the error: {@code messages} or {@code prompt}. */
  public String param() {
    return messages ? "messages" : "prompt";
  }

  private void value(byte b) {
    switch (b) {
      case '{', '[' -> {
        if (depth < MAX_DEPTH) {
          depth++;
          object[depth] = b == '{';
          expectKey[depth] = b == '{';
          keyAt[depth] = null;
        } else {
          depth++;
        }
      }
      case '}', ']' -> depth = Math.max(0, depth - 1);
      case ',' -> {
        if (depth <= MAX_DEPTH && depth > 0 && object[depth]) {
          expectKey[depth] = true;
        }
      }
      case ':' -> {
        if (depth <= MAX_DEPTH && depth > 0) {
          expectKey[depth] = false;
        }
      }
      case '"' -> {
        state = State.STRING;
        inKey = depth > 0 && depth <= MAX_DEPTH && object[depth] && expectKey[depth];
        if (inKey) {
          key.setLength(0);
          counting = false;
        } else {
          counting = prompt();
        }
      }
      default -> { }
    }
  }

  private void string(byte b) {
    if (b == '"') {
      state = State.VALUE;
      if (inKey) {
        keyAt[depth] = key.length() > MAX_KEY ? "" : key.toString();
        truncates |= depth == 1 && RequestParser.TRUNCATE_PROMPT_TOKENS.equals(keyAt[depth]);
      }
      return;
    }
    if (b == '\\') {
      state = State.ESCAPE;
      return;
    }
    if (inKey) {
      if (key.length() <= MAX_KEY) {
        key.append((char) (b & 0xff));
      }
    } else {
      count(b);
    }
  }

  /** Counts a code point at its first byte. */
  private void count(byte b) {
    if (counting && (b & 0xC0) != 0x80) {
      chars++;
    }
  }

  /** Whether a string value starting here is prompt text. */
  private boolean prompt() {
    String top = depth >= 1 && object[1] ? keyAt[1] : null;
    if ("prompt".equals(top)) {
      messages = false;
      return true;
    }
    if ("messages".equals(top) && depth <= MAX_DEPTH && object[depth]) {
      String field = keyAt[depth];
      if ("content".equals(field) || "text".equals(field)) {
        messages = true;
        return true;
      }
    }
    return false;
  }
}
