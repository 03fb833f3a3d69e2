package dev.tandem.router.grpc;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerRole;
import java.util.List;
import org.junit.jupiter.api.Test;

/** When the split decision treats a decode and a prefill worker as sharing compute (never split in auto). */
class SharedComputeTest {
  private static WorkerDescription worker(String host, String cpus, String gpu) {
    return new WorkerDescription(new WorkerId(host + cpus + gpu), WorkerRole.DECODE, 16, "m", 4096, 1000, 2048, "bf16", "", 64,
        "builtin", List.of(), new int[] {2}, "tcp", "x:1", null, host, cpus, 2, 256, 8192, List.of(), gpu, "", List.of());
  }

  @Test
  void cpuWorkersShareWhenTheirHostsAndCpuSetsOverlap() {
    assertTrue(Disaggregation.sharesCompute(worker("a", "0-3", ""), worker("a", "2-5", "")));
    assertFalse(Disaggregation.sharesCompute(worker("a", "0-3", ""), worker("a", "4-7", "")));
    assertFalse(Disaggregation.sharesCompute(worker("a", "0-3", ""), worker("b", "0-3", "")), "another host");
    assertTrue(Disaggregation.sharesCompute(worker("a", "", ""), worker("a", "7", "")), "no CPU set: every CPU");
  }

  @Test
  void gpuWorkersShareOnlyTheSameGpu() {
    String gpu0 = "GPU-00000000-0000-0000-0000-000000000000", gpu1 = "GPU-11111111-0000-0000-0000-000000000000";
    assertTrue(Disaggregation.sharesCompute(worker("a", "", gpu0), worker("a", "", gpu0)), "one GPU: splitting gains nothing");
    assertFalse(Disaggregation.sharesCompute(worker("a", "", gpu0), worker("a", "", gpu1)),
        "two GPUs of one node with every CPU each still split");
    assertFalse(Disaggregation.sharesCompute(worker("a", "0-3", gpu0), worker("a", "0-3", "")), "a GPU worker and a CPU one");
  }
}
