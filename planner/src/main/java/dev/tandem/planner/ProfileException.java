package dev.tandem.planner;

/** A profile file that is missing, malformed or for another model; the message names file and field. */
public final class ProfileException extends Exception {
  public ProfileException(String message) {
    super(message);
  }

  public ProfileException(String message, Throwable cause) {
    super(message, cause);
  }
}
