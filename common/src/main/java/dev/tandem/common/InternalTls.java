package dev.tandem.common;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;

/**
 * Mutual TLS between a deployment's own components (routers, workers, their KV transfer agents):
 * this component's certificate and private key (PEM, the key PKCS#8 unencrypted) and the
 * deployment's CA certificate. Every connection presents the certificate and accepts only peers
 * whose certificate the CA signed and that name {@link #PEER_NAME}; a component without one (or
 * with another CA's) cannot call a worker, read its KV or be routed to.
 *
 * <p>{@code tandem certs} writes a directory per component in the layout {@link #fromDirectory}
 * reads, which is also what a Kubernetes TLS secret from cert-manager holds.
 */
public record InternalTls(Path certificate, Path privateKey, Path authority) {
  /**
   * The DNS name every component's certificate carries and every connection verifies, whatever
   * address it dials: pod and host addresses change, the deployment's identity does not.
   */
  public static final String PEER_NAME = "tandem.internal";

  /**
   * @throws IllegalArgumentException naming the file, when one is missing or unreadable, the key
   *     is not the certificate's, the CA did not sign the certificate, the certificate has expired
   *     or does not name {@link #PEER_NAME}
   */
  public InternalTls {
    requireFile(certificate, "certificate");
    requireFile(privateKey, "private key");
    requireFile(authority, "CA certificate");
    check(certificate, privateKey, authority);
  }

  /**
   * {@code dir/tls.crt}, {@code dir/tls.key} and {@code dir/ca.crt}.
   *
   * @throws IllegalArgumentException naming the file that is missing or unreadable
   */
  public static InternalTls fromDirectory(Path dir) {
    if (!Files.isDirectory(dir)) {
      throw new IllegalArgumentException("--tls-dir " + dir + " is not a directory (make one with `tandem certs`)");
    }
    return new InternalTls(dir.resolve("tls.crt"), dir.resolve("tls.key"), dir.resolve("ca.crt"));
  }

  private static void check(Path certificate, Path privateKey, Path authority) {
    X509Certificate cert = readCertificate(certificate, "certificate");
    X509Certificate ca = readCertificate(authority, "CA certificate");
    PrivateKey key = readKey(privateKey);
    try {
      cert.checkValidity();
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("TLS certificate " + certificate + " is not valid now (" + cert.getNotBefore() + " to " + cert.getNotAfter() + ")");
    }
    try {
      cert.verify(ca.getPublicKey());
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("TLS certificate " + certificate + " was not signed by the CA in " + authority);
    }
    try {
      // The key is the certificate's if what it signs the certificate's public key verifies.
      String algorithm = key.getAlgorithm().equals("EC") ? "SHA256withECDSA" : "SHA256with" + key.getAlgorithm();
      byte[] probe = "tandem".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      Signature sign = Signature.getInstance(algorithm);
      sign.initSign(key);
      sign.update(probe);
      Signature verify = Signature.getInstance(algorithm);
      verify.initVerify(cert.getPublicKey());
      verify.update(probe);
      if (!verify.verify(sign.sign())) {
        throw new GeneralSecurityException("mismatch");
      }
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("TLS private key " + privateKey + " is not the key of certificate " + certificate);
    }
    try {
      var names = cert.getSubjectAlternativeNames();
      if (names == null || names.stream().noneMatch(n -> PEER_NAME.equals(n.get(1)))) {
        throw new IllegalArgumentException("TLS certificate " + certificate + " does not name " + PEER_NAME
            + " among its subject alternative names; every component's certificate must (`tandem certs` adds it)");
      }
    } catch (java.security.cert.CertificateParsingException e) {
      throw new IllegalArgumentException("TLS certificate " + certificate + ": unreadable subject alternative names", e);
    }
  }

  private static X509Certificate readCertificate(Path file, String what) {
    try (InputStream in = Files.newInputStream(file)) {
      return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      throw new IllegalArgumentException("TLS " + what + " " + file + " is not a PEM certificate: " + e.getMessage(), e);
    }
  }

  private static PrivateKey readKey(Path file) {
    String text;
    try {
      text = Files.readString(file);
    } catch (IOException e) {
      throw new IllegalArgumentException("TLS private key " + file + " is unreadable: " + e.getMessage(), e);
    }
    if (!text.contains("-----BEGIN PRIVATE KEY-----")) {
      throw new IllegalArgumentException("TLS private key " + file + " is not an unencrypted PKCS#8 PEM key (BEGIN PRIVATE KEY)"
          + "; convert one with `openssl pkcs8 -topk8 -nocrypt -in KEY -out " + file.getFileName() + "`");
    }
    byte[] der;
    try {
      der = Base64.getMimeDecoder().decode(text.substring(text.indexOf("-----BEGIN PRIVATE KEY-----") + 27, text.indexOf("-----END PRIVATE KEY-----")));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("TLS private key " + file + " is not valid PEM: " + e.getMessage(), e);
    }
    for (String algorithm : new String[] {"EC", "RSA", "Ed25519"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (GeneralSecurityException e) {
        // try the next
      }
    }
    throw new IllegalArgumentException("TLS private key " + file + " is not an EC, RSA or Ed25519 PKCS#8 key");
  }

  private static void requireFile(Path file, String what) {
    if (file == null) {
      throw new IllegalArgumentException("mutual TLS needs a " + what + " file");
    }
    if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
      throw new IllegalArgumentException("TLS " + what + " " + file + " is missing or unreadable (make one with `tandem certs`)");
    }
  }
}
