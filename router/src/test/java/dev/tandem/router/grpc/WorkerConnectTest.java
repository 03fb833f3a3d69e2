package dev.tandem.router.grpc;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A worker that cannot be reached at start: the error says why in words, over real gRPC channels. */
class WorkerConnectTest {
  @Test
  void aPortNothingListensOnIsSaidToRefuse() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // free once closed
    }
    String address = "127.0.0.1:" + port;
    var e = assertThrows(IllegalStateException.class, () -> WorkerClient.connect(address, Duration.ofSeconds(1)));
    assertTrue(e.getMessage().startsWith("worker at " + address + " did not answer within 1.0 s (connection refused"), e.getMessage());
  }

  @Test
  void aHostNameThatDoesNotResolveIsSaidToNotResolve() {
    // .invalid never resolves (RFC 2606).
    var e = assertThrows(IllegalStateException.class, () -> WorkerClient.connect("worker.invalid:9000", Duration.ofSeconds(2)));
    assertTrue(e.getMessage().contains("did not answer within 2.0 s (its host name does not resolve)"), e.getMessage());
  }
}
