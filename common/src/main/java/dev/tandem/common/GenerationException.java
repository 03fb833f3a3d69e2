package dev.tandem.common;

/**
 * A generation failed on the way to or on a worker. {@link Kind} is what a caller acts on: an
 * invalid request is the client's fault (HTTP 400), an unavailable worker is worth retrying
 * elsewhere (503), anything else is a server error (500).
 */
public final class GenerationException extends RuntimeException {
  /** What went wrong, as far as the caller cares. */
  public enum Kind {
    INVALID_REQUEST,
    UNAVAILABLE,
    INTERNAL
  }

  private final Kind kind;
  private final String code;

  /**
   * @param code the transport's own name for the failure (a gRPC status code, say), for messages
   */
  public GenerationException(Kind kind, String code, String message, Throwable cause) {
    super(message, cause);
    this.kind = kind;
    this.code = code;
  }

  public Kind kind() {
    return kind;
  }

  public String code() {
    return code;
  }
}
