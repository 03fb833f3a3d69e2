package dev.tandem.cli;

import dev.tandem.frontend.http.FrontendServer;
import picocli.CommandLine.Option;

/** Where the HTTP frontend listens; shared by {@code serve} and {@code frontend}. */
final class HttpOptions {
  @Option(names = "--host", defaultValue = "${env:TANDEM_HOST:-0.0.0.0}", description = "HTTP address to bind (default ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--port", defaultValue = "${env:TANDEM_PORT:-8000}", description = "HTTP port (default ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--max-body-bytes", defaultValue = "33554432", description = "Largest request body accepted (default ${DEFAULT-VALUE}).")
  int maxBodyBytes;

  @Option(names = "--worker-wait-s", defaultValue = "${env:TANDEM_WORKER_WAIT_S:-0}",
      description = "How long a request waits when no worker serves at all (a pool the planner scaled to zero coming back, workers starting) before a 503; 0 fails at once (default ${DEFAULT-VALUE}).")
  double workerWaitSeconds;

  FrontendServer.Config config() {
    return new FrontendServer.Config(host, port, maxBodyBytes, java.time.Duration.ofMillis((long) (workerWaitSeconds * 1000)));
  }
}
