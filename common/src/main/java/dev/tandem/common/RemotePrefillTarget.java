package dev.tandem.common;

/**
 * The prefill worker a decode worker is to have compute a request's prompt; {@code timeoutMillis}
 * bounds the prefill and pull (0: the decode worker's own bound).
 */
public record RemotePrefillTarget(String workerAddress, WorkerId workerId, int timeoutMillis) {
  public RemotePrefillTarget(String workerAddress, WorkerId workerId) {
    this(workerAddress, workerId, 0);
  }
}
