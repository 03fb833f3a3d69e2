package dev.tandem.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.CertificateAuthority;
import dev.tandem.common.InternalTls;
import dev.tandem.transfer.tcp.TcpTransferAgent;
import java.lang.foreign.MemorySegment;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The tcp backend under mutual TLS: the whole conformance suite, and who is refused. */
// The whole suite again over TLS handshakes and encrypted bulk reads: in the full run, not the fast tier.
@org.junit.jupiter.api.Tag("e2e")
class TcpTlsBackendTest extends TransferBackendConformanceTest {
  private static final CertificateAuthority CA = CertificateAuthority.create("test deployment", Duration.ofDays(1));
  private static final TransferTls TLS = TransferTls.of(TlsFixture.issue(CA, "worker"));

  @Override
  protected TransferAgent newAgent() {
    return new TcpTransferAgent("127.0.0.1", 0, TLS);
  }

  @Test
  void anAgentWithAnotherDeploymentsCertificateReadsNothing() {
    MemoryDescriptor d = owner.register(random(4096, 5));
    try (TransferAgent outsider = new TcpTransferAgent("127.0.0.1", 0, TransferTls.of(TlsFixture.component("outsider")))) {
      var e = assertThrows(ExecutionException.class,
          () -> outsider.read(List.of(d), List.of(arena.allocate(4096)), Duration.ofSeconds(10), null).get(20, TimeUnit.SECONDS));
      assertTrue(e.getCause().getMessage().contains("TLS handshake"), e.getCause().getMessage());
    }
  }

  @Test
  void aPlainTcpPeerWithTheRightKeyReadsNothing() throws Exception {
    MemoryDescriptor d = owner.register(random(4096, 6));
    try (TransferAgent plain = new TcpTransferAgent("127.0.0.1", 0)) {
      assertThrows(ExecutionException.class,
          () -> plain.read(List.of(d), List.of(arena.allocate(4096)), Duration.ofSeconds(10), null).get(20, TimeUnit.SECONDS));
    }
    // A raw socket speaking the read protocol gets no KV byte back either.
    int colon = d.agentAddress().lastIndexOf(':');
    try (Socket s = new Socket("127.0.0.1", Integer.parseInt(d.agentAddress().substring(colon + 1)))) {
      s.setSoTimeout(15_000);
      java.nio.ByteBuffer request = java.nio.ByteBuffer.allocate(44).putInt(0x544B5652).putLong(1).putLong(d.regionId())
          .putLong(d.key()).putLong(0).putLong(4096);
      s.getOutputStream().write(request.array()); // one write: the server may close right after it
      byte[] got;
      try {
        got = s.getInputStream().readNBytes(64);
      } catch (java.net.SocketException reset) {
        got = new byte[0];
      }
      // The server answers with a TLS alert (record type 21) or closes; never a DATA frame (int 1).
      assertTrue(got.length == 0 || got[0] == 21, "answered " + got.length + " bytes starting " + (got.length > 0 ? got[0] : -1));
    }
  }

  @Test
  void aCertificateFromTheSameCaIsEnough() throws Exception {
    MemorySegment src = random(1 << 16, 7);
    MemoryDescriptor d = owner.register(src);
    try (TransferAgent other = new TcpTransferAgent("127.0.0.1", 0, TransferTls.of(TlsFixture.issue(CA, "frontend")))) {
      MemorySegment dst = arena.allocate(1 << 16);
      other.read(List.of(d), List.of(dst), Duration.ofSeconds(10), null).get(20, TimeUnit.SECONDS);
      assertEquals(-1, src.mismatch(dst));
    }
  }

  @Test
  void certificateFilesThatDoNotMatchAreNamed() throws Exception {
    InternalTls a = TlsFixture.component("a");
    InternalTls b = TlsFixture.component("b");
    var e = assertThrows(IllegalArgumentException.class, () -> TransferTls.of(new InternalTls(a.certificate(), b.privateKey(), a.authority())));
    assertTrue(e.getMessage().contains(a.certificate().toString()) && e.getMessage().contains(b.privateKey().toString()), e.getMessage());
    var missing = assertThrows(IllegalArgumentException.class, () -> InternalTls.fromDirectory(a.certificate().getParent().resolve("nope")));
    assertTrue(missing.getMessage().contains("tandem certs"), missing.getMessage());
  }
}
