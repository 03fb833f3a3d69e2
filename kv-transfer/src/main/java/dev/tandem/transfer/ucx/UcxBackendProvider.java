package dev.tandem.transfer.ucx;

import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferBackendProvider;

/**
 * UCX through jucx: available where the system's libucx (Debian's {@code libucx0}) loads. Ranked
 * below tcp for now: with the peer-error handling it needs to fail reads from a vanished peer,
 * UCX on one host reads over its tcp transport, slower than the Netty tcp backend (see
 * docs/benchmarks.md). Select it by name ({@code ucx}) where RDMA makes it worth it.
 */
public final class UcxBackendProvider implements TransferBackendProvider {
  private static volatile String unavailable;

  @Override
  public String name() {
    return "ucx";
  }

  @Override
  public int priority() {
    return 5;
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
}
