package dev.tandem.transfer.local;

import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferTls;
import dev.tandem.transfer.TransferBackendProvider;

/** The in-process backend; always available, lowest priority (it cannot cross processes). */
public final class LocalBackendProvider implements TransferBackendProvider {
  @Override
  public String name() {
    return "local";
  }

  @Override
  public int priority() {
    return 0;
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public TransferAgent createAgent(String host) {
    return new LocalTransferAgent();
  }

  /** In one process there is no connection to secure: {@code tls} changes nothing. */
  @Override
  public TransferAgent createAgent(String host, int port, TransferTls tls) {
    return createAgent(host, port);
  }
}
