package dev.tandem.cli;

import dev.tandem.common.CertificateAuthority;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tandem certs}: a deployment's CA and a certificate per component, for {@code --tls-dir}. */
@Command(
    name = "certs",
    mixinStandardHelpOptions = true,
    description = {
      "Makes the certificates for mutual TLS between a deployment's components: a CA (OUT/ca.crt, OUT/ca.key) and, per component, OUT/NAME/{tls.crt,tls.key,ca.crt} to pass as --tls-dir.",
      "An existing CA in OUT is reused, so that running it again adds components to the same deployment. Keep ca.key away from the components: whoever holds it can join the deployment."
    })
final class CertsCommand implements Callable<Integer> {
  @Option(names = "--out", defaultValue = "tandem-certs", description = "Directory to write to (default ${DEFAULT-VALUE}).")
  Path out;

  @Option(names = "--component", split = ",", defaultValue = "frontend,worker",
      description = "Components to issue a certificate for, each into its own directory (default ${DEFAULT-VALUE}; a worker certificate serves every worker of the deployment).")
  List<String> components;

  @Option(names = "--san", split = ",", description = "Extra DNS names or IP addresses for the certificates (tandem.internal, localhost and 127.0.0.1 are always in).")
  List<String> names = List.of();

  @Option(names = "--days", defaultValue = "365", description = "Validity of the component certificates in days (the CA: 10 years; default ${DEFAULT-VALUE}).")
  int days;

  @Override
  public Integer call() throws Exception {
    if (days <= 0) {
      throw new IllegalArgumentException("--days must be positive, was " + days);
    }
    CertificateAuthority ca;
    if (Files.exists(out.resolve("ca.key"))) {
      ca = CertificateAuthority.load(out);
      System.out.println("certs: using the CA in " + out);
    } else {
      ca = CertificateAuthority.create("Tandem deployment CA", Duration.ofDays(3650));
      ca.writeTo(out);
      System.out.println("certs: made a CA: " + out.resolve("ca.crt") + " (its key " + out.resolve("ca.key") + " is needed only to issue more)");
    }
    for (String component : components) {
      if (!component.matches("[A-Za-z0-9][A-Za-z0-9._-]*")) {
        throw new IllegalArgumentException("--component '" + component + "': letters, digits, '.', '_' and '-' only");
      }
      Path dir = out.resolve(component);
      ca.writeComponent(dir, ca.issue(component, names, Duration.ofDays(days)));
      System.out.println("certs: " + component + " → --tls-dir " + dir);
    }
    return 0;
  }
}
