package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** A GPU's id is its UUID as nvidia-smi prints it, so that workers on one GPU can tell. */
class GpuIdTest {
  @Test
  void theUuidBytesReadAsNvidiaSmiPrintsThem() {
    byte[] bytes = new byte[16];
    for (int i = 0; i < 16; i++) {
      bytes[i] = (byte) (i == 15 ? 0xfe : i);
    }
    assertEquals("GPU-00010203-0405-0607-0809-0a0b0c0d0efe", CudaDevice.uuidName(bytes));
  }
}
