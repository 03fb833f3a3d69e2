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

  FrontendServer.Config config() {
    return new FrontendServer.Config(host, port, maxBodyBytes);
  }
}
