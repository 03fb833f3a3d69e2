package dev.tandem.transfer;

/**
 * A transfer backend, found with {@link java.util.ServiceLoader} (grpc-java's transport provider
 * pattern): the available backend with the highest priority wins unless one is named explicitly.
 */
public interface TransferBackendProvider {
  /** The name used to select it ({@code --kv-transfer tcp}). */
  String name();

  /** Higher wins among available backends. */
  int priority();

  /** False when what the backend needs is missing (a native library, a device). */
  boolean isAvailable();

  /** Why it is unavailable, for error messages; empty when available. */
  default String unavailableReason() {
    return "";
  }

  /** A new agent; {@code host} is the address peers should use to reach it. */
  TransferAgent createAgent(String host);
}
