package dev.tandem.cli;

import dev.tandem.common.InternalTls;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Mutual TLS between a deployment's components; shared by {@code worker}, {@code frontend} and {@code serve}. */
final class TlsOptions {
  @Option(names = "--tls-dir", defaultValue = "${env:TANDEM_TLS_DIR}",
      description = "Directory with this component's tls.crt, tls.key and the deployment's ca.crt (`tandem certs` makes them; a Kubernetes TLS secret holds the same): "
          + "worker gRPC, prefill-decode calls and KV transfer agents then speak mutual TLS and accept only peers the CA signed. Default: plaintext; every component of a deployment needs the same choice.")
  Path dir;

  /** The certificates, checked; null without {@code --tls-dir}. */
  InternalTls tls() {
    return dir == null ? null : InternalTls.fromDirectory(dir);
  }
}
