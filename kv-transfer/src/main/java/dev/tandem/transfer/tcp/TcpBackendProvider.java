package dev.tandem.transfer.tcp;

import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferTls;
import dev.tandem.transfer.TransferBackendProvider;

/** TCP through Netty: always available, works across machines; UCX outranks it where present. */
public final class TcpBackendProvider implements TransferBackendProvider {
  @Override
  public String name() {
    return "tcp";
  }

  @Override
  public int priority() {
    return 10;
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public TransferAgent createAgent(String host) {
    return new TcpTransferAgent(host);
  }

  @Override
  public TransferAgent createAgent(String host, int port) {
    return new TcpTransferAgent(host, port);
  }

  @Override
  public TransferAgent createAgent(String host, int port, TransferTls tls) {
    return new TcpTransferAgent(host, port, tls);
  }
}
