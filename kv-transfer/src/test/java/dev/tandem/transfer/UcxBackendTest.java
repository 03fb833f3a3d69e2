package dev.tandem.transfer;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.transfer.ucx.UcxBackendProvider;
import dev.tandem.transfer.ucx.UcxTransferAgent;

/** The UCX backend (needs libucx0; the surefire environment sets UCX_NET_DEVICES=lo). */
class UcxBackendTest extends TransferBackendConformanceTest {
  @Override
  protected TransferAgent newAgent() {
    UcxBackendProvider provider = new UcxBackendProvider();
    assumeTrue(provider.isAvailable(), provider.unavailableReason());
    return new UcxTransferAgent("127.0.0.1");
  }

  @org.junit.jupiter.api.Test
  void itsSideChannelListensOnTheFixedPortItIsGiven() throws Exception {
    UcxBackendProvider provider = new UcxBackendProvider();
    assumeTrue(provider.isAvailable(), provider.unavailableReason());
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
      port = free.getLocalPort();
    }
    try (TransferAgent agent = provider.createAgent("127.0.0.1", port)) {
      org.junit.jupiter.api.Assertions.assertEquals("127.0.0.1:" + port, agent.address());
    }
  }
}
