package dev.tandem.frontend.http;

/**
 * An error returned to the client in OpenAI's shape: {@code {"error": {"message", "type", "param",
 * "code"}}} with an HTTP status.
 */
public final class ApiException extends RuntimeException {
  private final int status;
  private final String type;
  private final String param;
  private final String code;

  public ApiException(int status, String message, String type, String param, String code) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
  }

  /** 400 invalid_request_error about one parameter. */
  /** A parameter this deployment understands but cannot honour (code {@code unsupported_parameter}). */
  public static ApiException unsupportedParameter(String param, String message) {
    return new ApiException(400, message, "invalid_request_error", param, "unsupported_parameter");
  }

  public static ApiException invalid(String param, String message) {
    return new ApiException(400, message, "invalid_request_error", param, null);
  }

  /** 400 invalid_request_error with a code. */
  public static ApiException invalid(String param, String message, String code) {
    return new ApiException(400, message, "invalid_request_error", param, code);
  }

  public int status() {
    return status;
  }

  public String type() {
    return type;
  }

  public String param() {
    return param;
  }

  public String code() {
    return code;
  }
}
