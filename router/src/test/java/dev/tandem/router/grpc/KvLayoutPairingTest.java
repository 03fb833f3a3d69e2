package dev.tandem.router.grpc;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerRole;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which decode and prefill workers the router pairs: those whose KV blocks read alike. */
class KvLayoutPairingTest {
  private static WorkerDescription worker(WorkerRole role, String dtype, String rotation) {
    return new WorkerDescription(new WorkerId(role.cliName()), role, 16, "m", 4096, 1000, 2048, dtype, rotation, 64,
        "builtin", List.of(), new int[] {2}, "tcp", "x:1", null, "h", "", 2, 256, 8192, List.of(), "", "", List.of());
  }

  @Test
  void sameDtypeAndRotationPair() {
    assertNull(Disaggregation.kvLayoutMismatch(worker(WorkerRole.DECODE, "bf16", ""), worker(WorkerRole.PREFILL, "bf16", "")));
    assertNull(Disaggregation.kvLayoutMismatch(
        worker(WorkerRole.DECODE, "bf16", "longrope-long"), worker(WorkerRole.PREFILL, "bf16", "longrope-long")));
  }

  @Test
  void anotherDtypeOrFactorSetIsRefusedSayingWhichFlag() {
    String dtype = Disaggregation.kvLayoutMismatch(worker(WorkerRole.DECODE, "f32", ""), worker(WorkerRole.PREFILL, "bf16", ""));
    assertTrue(dtype.contains("f32") && dtype.contains("bf16") && dtype.contains("--kv-cache-dtype"), dtype);
    String rotation = Disaggregation.kvLayoutMismatch(
        worker(WorkerRole.DECODE, "bf16", "longrope-short"), worker(WorkerRole.PREFILL, "bf16", "longrope-long"));
    assertTrue(rotation.contains("longrope-short") && rotation.contains("longrope-long") && rotation.contains("--max-context-length"), rotation);
    String oneRotation = Disaggregation.kvLayoutMismatch(
        worker(WorkerRole.DECODE, "bf16", ""), worker(WorkerRole.PREFILL, "bf16", "longrope-short"));
    assertTrue(oneRotation.contains("the model's one rotation"), oneRotation);
  }
}
