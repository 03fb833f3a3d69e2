package dev.tandem.common;

/**
 * The prefill worker a decode worker is to have compute a request's prompt; {@code timeoutMillis}
 * bounds the prefill and pull (0: the decode worker's own bound); {@code kvTransferBackend} names
 * the transfer backend to pull with (empty: the decode worker's primary one).
 */
public record RemotePrefillTarget(String workerAddress, WorkerId workerId, int timeoutMillis, String kvTransferBackend) {
  public RemotePrefillTarget {
    kvTransferBackend = kvTransferBackend == null ? "" : kvTransferBackend;
  }

  public RemotePrefillTarget(String workerAddress, WorkerId workerId, int timeoutMillis) {
    this(workerAddress, workerId, timeoutMillis, "");
  }

  public RemotePrefillTarget(String workerAddress, WorkerId workerId) {
    this(workerAddress, workerId, 0, "");
  }
}
