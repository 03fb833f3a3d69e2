package dev.tandem.planner.connect;

/** A scaling action that did not happen (a process that would not start, a 403 or 409 from Kubernetes). */
public final class ConnectorException extends Exception {
  public ConnectorException(String message) {
    super(message);
  }

  public ConnectorException(String message, Throwable cause) {
    super(message, cause);
  }
}
