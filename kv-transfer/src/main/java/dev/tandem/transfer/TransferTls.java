package dev.tandem.transfer;

import dev.tandem.common.InternalTls;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import java.io.IOException;
import java.net.Socket;
import java.time.Duration;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;

/**
 * Mutual TLS for the transfer agents' connections ({@link InternalTls}): both ends present the
 * deployment's certificates, the server requires the client's, the client verifies the server's
 * name ({@link InternalTls#PEER_NAME}). For Netty pipelines (tcp) and for plain sockets (the UCX
 * side channel). TLS 1.3 only. Immutable, thread-safe.
 */
public final class TransferTls {
  private static final String[] PROTOCOLS = {"TLSv1.3"};
  /** How long a connection may take to finish its handshake before it is dropped. */
  public static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);

  private final SslContext server;
  private final SslContext client;

  private TransferTls(SslContext server, SslContext client) {
    this.server = server;
    this.client = client;
  }

  /**
   * @throws IllegalArgumentException naming the files when they do not hold a certificate, a key
   *     matching it, and a CA certificate
   */
  public static TransferTls of(InternalTls tls) {
    try {
      SslContext server =
          SslContextBuilder.forServer(tls.certificate().toFile(), tls.privateKey().toFile())
              .trustManager(tls.authority().toFile())
              .clientAuth(ClientAuth.REQUIRE)
              .sslProvider(SslProvider.JDK)
              .protocols(PROTOCOLS)
              .build();
      SslContext client =
          SslContextBuilder.forClient()
              .keyManager(tls.certificate().toFile(), tls.privateKey().toFile())
              .trustManager(tls.authority().toFile())
              .endpointIdentificationAlgorithm("HTTPS")
              .sslProvider(SslProvider.JDK)
              .protocols(PROTOCOLS)
              .build();
      return new TransferTls(server, client);
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          "cannot use TLS certificate " + tls.certificate() + " with key " + tls.privateKey() + " and CA " + tls.authority() + ": " + e.getMessage(), e);
    }
  }

  /**
   * Whether {@code error} (from a Netty pipeline) is a peer failing TLS: no TLS at all, another
   * deployment's certificate, none: the peer's doing, not a bug.
   */
  public static boolean isTlsFailure(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof javax.net.ssl.SSLException || t instanceof io.netty.handler.ssl.NotSslRecordException) {
        return true;
      }
    }
    return false;
  }

  /** The server end of a connection a peer opened. */
  public SslHandler serverHandler(ByteBufAllocator alloc) {
    SslHandler h = server.newHandler(alloc);
    h.setHandshakeTimeoutMillis(HANDSHAKE_TIMEOUT.toMillis());
    return h;
  }

  /** The client end of a connection to a peer agent; the peer must prove {@link InternalTls#PEER_NAME}. */
  public SslHandler clientHandler(ByteBufAllocator alloc, int port) {
    SslHandler h = client.newHandler(alloc, InternalTls.PEER_NAME, port);
    h.setHandshakeTimeoutMillis(HANDSHAKE_TIMEOUT.toMillis());
    return h;
  }

  /** A listening socket whose connections must present a deployment certificate. */
  public SSLServerSocket serverSocket() throws IOException {
    SSLServerSocket s = (SSLServerSocket) ((JdkSslContext) server).context().getServerSocketFactory().createServerSocket();
    s.setNeedClientAuth(true);
    s.setEnabledProtocols(PROTOCOLS);
    return s;
  }

  /**
   * Runs the client side of the handshake over {@code connected} (its timeout bounds it).
   *
   * @throws IOException when the peer does not prove it is part of the deployment
   */
  public SSLSocket clientSocket(Socket connected) throws IOException {
    SSLSocket s = (SSLSocket) ((JdkSslContext) client).context().getSocketFactory()
        .createSocket(connected, InternalTls.PEER_NAME, connected.getPort(), true);
    SSLParameters p = s.getSSLParameters();
    p.setEndpointIdentificationAlgorithm("HTTPS");
    p.setProtocols(PROTOCOLS);
    s.setSSLParameters(p);
    s.startHandshake();
    return s;
  }
}
