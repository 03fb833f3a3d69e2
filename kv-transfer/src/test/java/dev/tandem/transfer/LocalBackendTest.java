package dev.tandem.transfer;

import dev.tandem.transfer.local.LocalTransferAgent;

class LocalBackendTest extends TransferBackendConformanceTest {
  @Override
  protected TransferAgent newAgent() {
    return new LocalTransferAgent();
  }
}
