package dev.tandem.common;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A deployment's own certificate authority, for {@link InternalTls}: an ECDSA P-256 CA that
 * issues each component (frontend, worker, planner) a certificate for both ends of a connection
 * (server and client authentication) naming {@link InternalTls#PEER_NAME}. On disk, as {@code
 * tandem certs} writes it: {@code ca.crt} and {@code ca.key} in the root, and per component a
 * directory with {@code tls.crt}, {@code tls.key} and {@code ca.crt} (what {@code --tls-dir}
 * reads). Keys are PKCS#8 PEM, readable by the owner only.
 */
public final class CertificateAuthority {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final String SIGNATURE = "SHA256withECDSA";

  private final X509Certificate certificate;
  private final PrivateKey key;

  private CertificateAuthority(X509Certificate certificate, PrivateKey key) {
    this.certificate = certificate;
    this.key = key;
  }

  /** A certificate and its private key, PEM. */
  public record Issued(String certificatePem, String privateKeyPem) {}

  /** A new CA named {@code name}, valid for {@code validity}. */
  public static CertificateAuthority create(String name, Duration validity) {
    KeyPair pair = newKeyPair();
    X500Name subject = new X500Name("CN=" + name);
    try {
      X509v3CertificateBuilder b = builder(subject, subject, pair.getPublic(), validity);
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(pair.getPublic()));
      return new CertificateAuthority(sign(b, pair.getPrivate()), pair.getPrivate());
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalStateException("cannot make a CA certificate", e);
    }
  }

  /**
   * The CA in {@code dir} ({@code ca.crt}, {@code ca.key}).
   *
   * @throws IllegalArgumentException naming the file that is missing or not a CA certificate/key
   */
  public static CertificateAuthority load(Path dir) {
    Path crt = dir.resolve("ca.crt");
    Path pem = dir.resolve("ca.key");
    X509Certificate cert;
    try (InputStream in = Files.newInputStream(crt)) {
      cert = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      throw new IllegalArgumentException(crt + ": not a readable PEM certificate: " + e.getMessage(), e);
    }
    if (cert.getBasicConstraints() < 0) {
      throw new IllegalArgumentException(crt + ": not a CA certificate (basicConstraints CA is false)");
    }
    PrivateKey key;
    try {
      String text = Files.readString(pem);
      String body = text.replaceAll("-----(BEGIN|END) PRIVATE KEY-----", "").replaceAll("\\s", "");
      key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(body)));
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      throw new IllegalArgumentException(pem + ": not a readable PKCS#8 PEM EC private key: " + e.getMessage(), e);
    }
    return new CertificateAuthority(cert, key);
  }

  /**
   * A certificate for {@code component}, for server and client authentication, naming {@link
   * InternalTls#PEER_NAME}, {@code localhost}, {@code 127.0.0.1} and {@code names} (DNS names or
   * IP addresses).
   *
   * @throws IllegalArgumentException for a name that is neither a DNS name nor an IP address
   */
  public Issued issue(String component, List<String> names, Duration validity) {
    KeyPair pair = newKeyPair();
    Set<String> all = new LinkedHashSet<>(List.of(InternalTls.PEER_NAME, "localhost", "127.0.0.1"));
    all.addAll(names);
    List<GeneralName> san = new ArrayList<>();
    for (String n : all) {
      san.add(isIp(n) ? new GeneralName(GeneralName.iPAddress, n) : new GeneralName(GeneralName.dNSName, dnsName(n)));
    }
    try {
      X509v3CertificateBuilder b =
          builder(X500Name.getInstance(certificate.getSubjectX500Principal().getEncoded()), new X500Name("CN=" + component), pair.getPublic(), validity);
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyAgreement));
      b.addExtension(Extension.extendedKeyUsage, false,
          new ExtendedKeyUsage(new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}));
      b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(san.toArray(GeneralName[]::new)));
      b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(pair.getPublic()));
      b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(certificate));
      return new Issued(pem("CERTIFICATE", sign(b, key).getEncoded()), pem("PRIVATE KEY", pair.getPrivate().getEncoded()));
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalStateException("cannot issue a certificate for " + component, e);
    }
  }

  /** Writes {@code ca.crt} and {@code ca.key} (owner-only) into {@code dir}. */
  public void writeTo(Path dir) throws IOException {
    Files.createDirectories(dir);
    write(dir.resolve("ca.crt"), certificatePem(), false);
    write(dir.resolve("ca.key"), pem("PRIVATE KEY", key.getEncoded()), true);
  }

  /** Writes {@code issued} as {@code tls.crt}, {@code tls.key} (owner-only) and this CA's {@code ca.crt} into {@code dir}. */
  public void writeComponent(Path dir, Issued issued) throws IOException {
    Files.createDirectories(dir);
    write(dir.resolve("tls.crt"), issued.certificatePem(), false);
    write(dir.resolve("tls.key"), issued.privateKeyPem(), true);
    write(dir.resolve("ca.crt"), certificatePem(), false);
  }

  public String certificatePem() {
    try {
      return pem("CERTIFICATE", certificate.getEncoded());
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  public X509Certificate certificate() {
    return certificate;
  }

  private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, PublicKey key, Duration validity) {
    Instant now = Instant.now();
    return new JcaX509v3CertificateBuilder(
        issuer,
        new BigInteger(127, RANDOM),
        Date.from(now.minus(Duration.ofMinutes(5))), // tolerate clocks a little behind
        Date.from(now.plus(validity)),
        subject,
        key);
  }

  private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey signer) throws GeneralSecurityException {
    try {
      return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder(SIGNATURE).build(signer)));
    } catch (OperatorCreationException e) {
      throw new GeneralSecurityException(e);
    }
  }

  private static KeyPair newKeyPair() {
    try {
      KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
      g.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
      return g.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JDK cannot make P-256 keys", e);
    }
  }

  private static boolean isIp(String name) {
    if (!name.matches("[0-9.]+") && !name.contains(":")) {
      return false;
    }
    try {
      InetAddress.ofLiteral(name);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static String dnsName(String name) {
    if (!name.matches("(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*")) {
      throw new IllegalArgumentException("'" + name + "' is neither a DNS name nor an IP address");
    }
    return name;
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
        + "\n-----END " + type + "-----\n";
  }

  private static void write(Path file, String text, boolean secret) throws IOException {
    Path tmp = Files.createTempFile(file.toAbsolutePath().getParent(), ".tandem-", ".tmp",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(secret ? "rw-------" : "rw-r--r--")));
    Files.writeString(tmp, text);
    Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }
}
