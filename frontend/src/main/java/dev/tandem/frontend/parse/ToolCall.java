package dev.tandem.frontend.parse;

import java.security.SecureRandom;

/** One call of a tool as OpenAI returns it: an id, the function's name, its arguments as JSON text. */
public record ToolCall(String id, String name, String arguments) {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final String ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

  /** A call with a fresh id ({@code call_} and 24 random characters). */
  public static ToolCall of(String name, String arguments) {
    StringBuilder id = new StringBuilder("call_");
    for (int i = 0; i < 24; i++) {
      id.append(ALPHABET.charAt(RANDOM.nextInt(ALPHABET.length())));
    }
    return new ToolCall(id.toString(), name, arguments);
  }
}
