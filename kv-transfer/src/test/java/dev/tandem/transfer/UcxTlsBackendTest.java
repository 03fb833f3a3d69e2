package dev.tandem.transfer;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.transfer.ucx.UcxBackendProvider;
import dev.tandem.transfer.ucx.UcxTransferAgent;
import java.io.DataOutputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The UCX backend with its side channel under mutual TLS (needs libucx0): the conformance suite,
 * and a reader without the deployment's certificate gets no region (so no UCX remote key).
 */
// The whole suite again over TLS handshakes and encrypted bulk reads: in the full run, not the fast tier.
@org.junit.jupiter.api.Tag("e2e")
class UcxTlsBackendTest extends TransferBackendConformanceTest {
  private static final TransferTls TLS = TransferTls.of(TlsFixture.component("worker"));

  @Override
  protected TransferAgent newAgent() {
    UcxBackendProvider provider = new UcxBackendProvider();
    assumeTrue(provider.isAvailable(), provider.unavailableReason());
    return new UcxTransferAgent("127.0.0.1", 0, true, TLS);
  }

  @Test
  void aReaderWithoutTheDeploymentsCertificateGetsNoRegion() throws Exception {
    MemoryDescriptor d = owner.register(random(4096, 8));
    try (TransferAgent outsider = new UcxTransferAgent("127.0.0.1", 0, true, TransferTls.of(TlsFixture.component("outsider")));
        TransferAgent plain = new UcxTransferAgent("127.0.0.1", 0, true, null)) {
      for (TransferAgent a : List.of(outsider, plain)) {
        assertThrows(ExecutionException.class,
            () -> a.read(List.of(d), List.of(arena.allocate(4096)), Duration.ofSeconds(5), null).get(30, TimeUnit.SECONDS));
      }
    }
    // A raw client asking for the region by id and key is dropped at the handshake.
    int colon = d.agentAddress().lastIndexOf(':');
    try (Socket s = new Socket("127.0.0.1", Integer.parseInt(d.agentAddress().substring(colon + 1)))) {
      s.setSoTimeout(15_000);
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      out.writeByte(2);
      out.writeLong(d.regionId());
      out.writeLong(d.key());
      out.flush();
      byte[] got = s.getInputStream().readNBytes(64);
      assertTrue(got.length == 0 || got[0] == 21, "answered " + got.length + " bytes starting " + (got.length > 0 ? got[0] : -1));
    }
  }
}
