package dev.tandem.transfer.ucx;

import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferTls;
import dev.tandem.transfer.TransferBackendProvider;

/**
 * UCX through jucx: available where the system's libucx (Debian's {@code libucx0}) loads. The
 * preferred backend: shared memory between workers of one node (see {@link UcxTransferAgent}),
 * RDMA or UCX's tcp transport between nodes.
 */
public final class UcxBackendProvider implements TransferBackendProvider {
  private static volatile String unavailable;

  @Override
  public String name() {
    return "ucx";
  }

  @Override
  public int priority() {
    return 20;
  }

  @Override
  public boolean isAvailable() {
    return unavailableReason().isEmpty();
  }

  @Override
  public String unavailableReason() {
    String reason = unavailable;
    if (reason == null) {
      try {
        new UcxWorkerThread("ucx-probe").close();
        reason = "";
      } catch (Throwable t) {
        reason = "UCX could not start (" + t + "); install libucx0 (apt-get install -y libucx0)";
      }
      unavailable = reason;
    }
    return reason;
  }

  @Override
  public TransferAgent createAgent(String host) {
    return new UcxTransferAgent(host);
  }

  @Override
  public TransferAgent createAgent(String host, int port) {
    return new UcxTransferAgent(host, port, true);
  }

  @Override
  public TransferAgent createAgent(String host, int port, TransferTls tls) {
    return new UcxTransferAgent(host, port, true, tls);
  }
}
