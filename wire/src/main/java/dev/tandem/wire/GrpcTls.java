package dev.tandem.wire;

import dev.tandem.common.InternalTls;
import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ServerCredentials;
import io.grpc.TlsChannelCredentials;
import io.grpc.TlsServerCredentials;
import java.io.IOException;

/**
 * The worker API's transport security: plaintext without certificates, else mutual TLS with the
 * deployment's ({@link InternalTls}) — a worker accepts only callers with a certificate its CA
 * signed, a caller accepts only a worker whose certificate names {@link InternalTls#PEER_NAME}
 * (whatever address it dialled: set it as the channel's authority).
 */
public final class GrpcTls {
  private GrpcTls() {}

  /**
   * @param tls null: plaintext
   * @throws IllegalArgumentException naming the files gRPC cannot use
   */
  public static ServerCredentials server(InternalTls tls) {
    if (tls == null) {
      return InsecureServerCredentials.create();
    }
    try {
      return TlsServerCredentials.newBuilder()
          .keyManager(tls.certificate().toFile(), tls.privateKey().toFile())
          .trustManager(tls.authority().toFile())
          .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE)
          .build();
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("cannot serve gRPC with TLS certificate " + tls.certificate() + ": " + e.getMessage(), e);
    }
  }

  /**
   * @param tls null: plaintext
   * @throws IllegalArgumentException naming the files gRPC cannot use
   */
  public static ChannelCredentials channel(InternalTls tls) {
    if (tls == null) {
      return InsecureChannelCredentials.create();
    }
    try {
      return TlsChannelCredentials.newBuilder()
          .keyManager(tls.certificate().toFile(), tls.privateKey().toFile())
          .trustManager(tls.authority().toFile())
          .build();
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("cannot call gRPC with TLS certificate " + tls.certificate() + ": " + e.getMessage(), e);
    }
  }
}
