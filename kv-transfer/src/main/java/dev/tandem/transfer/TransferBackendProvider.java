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

  /**
   * A new agent listening on {@code port} (0: any free port), so that a firewall or a Kubernetes
   * Service can name it.
   *
   * @throws IllegalArgumentException for a fixed port where the backend listens on none
   */
  default TransferAgent createAgent(String host, int port) {
    if (port != 0) {
      throw new IllegalArgumentException("KV transfer backend " + name() + " listens on no port; --kv-transfer-port does not apply");
    }
    return createAgent(host);
  }

  /**
   * A new agent whose connections are mutual TLS ({@code tls}; null: plain).
   *
   * @throws IllegalArgumentException for TLS where the backend has no connections to secure
   */
  default TransferAgent createAgent(String host, int port, TransferTls tls) {
    if (tls != null) {
      throw new IllegalArgumentException("KV transfer backend " + name() + " does not support mutual TLS");
    }
    return createAgent(host, port);
  }
}
