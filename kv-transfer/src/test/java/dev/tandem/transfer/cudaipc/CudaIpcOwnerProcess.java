package dev.tandem.transfer.cudaipc;

import dev.tandem.transfer.RegisteredMemory;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The owner process of {@code CudaIpcDeviceTest}: allocates {@code BYTES} of GPU memory through a
 * cuda-ipc agent, fills it with {@link CudaIpcDeviceTest#pattern}, prints {@code READY address
 * regionId key}, and serves until its stdin closes or it is killed.
 */
public final class CudaIpcOwnerProcess {
  private CudaIpcOwnerProcess() {}

  public static void main(String[] args) throws Exception {
    long bytes = Long.parseLong(args[0]);
    try (CudaIpcTransferAgent agent = CudaIpcTransferAgent.open(); Arena arena = Arena.ofConfined()) {
      RegisteredMemory memory = agent.allocate(bytes);
      MemorySegment host = arena.allocate(bytes, 64);
      CudaIpcDeviceTest.pattern(host, 42);
      DeviceBytes.write(memory.segment().address(), host);
      System.out.println("READY " + memory.descriptor().agentAddress() + " " + memory.descriptor().regionId() + " "
          + memory.descriptor().key());
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in)).readLine();
    }
  }
}
