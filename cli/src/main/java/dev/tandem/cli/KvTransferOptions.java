package dev.tandem.cli;

import dev.tandem.worker.WorkerServer;
import java.time.Duration;
import picocli.CommandLine.Option;

/** How prefill and decode workers move KV; shared by {@code worker} and {@code serve --mode disagg}. */
final class KvTransferOptions {
  @Option(names = "--kv-transfer", defaultValue = "${env:TANDEM_KV_TRANSFER:-auto}", description = "KV transfer backend of prefill/decode workers: auto (ucx where libucx0 is installed, with tcp beside it: routers probe both per peer pair and each pull takes the faster; else tcp), ucx, tcp or local (same process only). Default ${DEFAULT-VALUE}.")
  String backend;

  @Option(names = "--kv-transfer-host", defaultValue = "${env:TANDEM_KV_TRANSFER_HOST}", description = "Address peers reach this worker's transfer agent at (default: the worker's --host).")
  String host;

  @Option(names = "--kv-transfer-port", converter = PortConverter.class, defaultValue = "${env:TANDEM_KV_TRANSFER_PORT:-0}", description = "Port of the primary transfer agent (0, the default: any free port); with auto, the agents beside it take the ports after it. Fix it where a firewall or a Kubernetes Service must name it.")
  int port;

  @Option(names = "--kv-transfer-timeout-ms", defaultValue = "${env:TANDEM_KV_TRANSFER_TIMEOUT_MS:-30000}", description = "Bound on one request's remote prefill plus KV pull, and on how long a prefill worker holds blocks for a decode worker; past it the decode worker prefills itself (default ${DEFAULT-VALUE}).")
  long timeoutMs;

  WorkerServer.KvTransfer config(String defaultHost) {
    if (timeoutMs <= 0) {
      throw new IllegalArgumentException("--kv-transfer-timeout-ms must be positive, was " + timeoutMs);
    }
    return new WorkerServer.KvTransfer(backend, host != null ? host : defaultHost, Duration.ofMillis(timeoutMs), port);
  }
}
