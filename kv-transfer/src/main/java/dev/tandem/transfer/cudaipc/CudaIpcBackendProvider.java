package dev.tandem.transfer.cudaipc;

import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferBackendProvider;
import dev.tandem.transfer.TransferTls;

/**
 * {@code cuda-ipc}: GPU to GPU between processes on one node. Available where a CUDA device
 * initialises. Its agents read device memory only, so it is never a worker's primary backend (that
 * one holds the host KV cache): with {@code --kv-transfer auto} it runs beside tcp or ucx over the
 * GPU's copy of the KV cache, and each pair of workers pulls over whichever its link probe found
 * faster (a pair on two nodes fails the cuda-ipc probe and keeps the other).
 */
public final class CudaIpcBackendProvider implements TransferBackendProvider {
  @Override
  public String name() {
    return "cuda-ipc";
  }

  /** Below tcp and ucx (never the automatic primary), above local (so it runs beside them). */
  @Override
  public int priority() {
    return 5;
  }

  @Override
  public boolean isAvailable() {
    return CudaDeviceMemory.unavailableReason() == null;
  }

  @Override
  public String unavailableReason() {
    String reason = CudaDeviceMemory.unavailableReason();
    return reason == null ? "" : reason;
  }

  @Override
  public TransferAgent createAgent(String host) {
    return CudaIpcTransferAgent.open();
  }

  /** Listens on a Unix socket, not a port: {@code port} does not apply and is ignored. */
  @Override
  public TransferAgent createAgent(String host, int port) {
    return createAgent(host);
  }

  /**
   * No TLS: the side channel is a Unix socket in a directory only this user can enter, and each
   * region's key is still checked on every read.
   */
  @Override
  public TransferAgent createAgent(String host, int port, TransferTls tls) {
    return createAgent(host);
  }
}
