package dev.tandem.transfer;

import dev.tandem.common.CertificateAuthority;
import dev.tandem.common.InternalTls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** Certificates for the TLS tests: a deployment CA with one component, and an outsider's CA. */
final class TlsFixture {
  private TlsFixture() {}

  /** A fresh CA in a temporary directory and one component's {@link InternalTls} from it. */
  static InternalTls component(String name) {
    return issue(CertificateAuthority.create("test deployment", Duration.ofDays(1)), name);
  }

  /** A component of {@code ca}. */
  static InternalTls issue(CertificateAuthority ca, String name) {
    try {
      Path dir = Files.createTempDirectory("tandem-tls-");
      ca.writeComponent(dir, ca.issue(name, List.of(), Duration.ofDays(1)));
      return InternalTls.fromDirectory(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
