package dev.tandem.transfer;

import dev.tandem.transfer.ucx.UcxTransferAgent;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;

/**
 * The other process of {@link UcxProcessDeathTest}: {@code owner BYTES} registers a region filled
 * with byte 7 and prints {@code READY address regionId key}; {@code reader ADDRESS REGION KEY BYTES}
 * reads that region again and again, printing {@code READING} once the first read is under way.
 * Either waits to be killed.
 */
public final class UcxPeerProcess {
  private UcxPeerProcess() {}

  public static void main(String[] args) throws Exception {
    UcxTransferAgent agent = new UcxTransferAgent("127.0.0.1");
    Arena arena = Arena.ofShared();
    if (args[0].equals("owner")) {
      MemorySegment region = arena.allocate(Long.parseLong(args[1]), 64);
      region.fill((byte) 7);
      MemoryDescriptor d = agent.register(region);
      System.out.println("READY " + d.agentAddress() + " " + d.regionId() + " " + d.key());
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in)).readLine(); // until killed
      return;
    }
    long bytes = Long.parseLong(args[4]);
    MemoryDescriptor region = new MemoryDescriptor(args[1], Long.parseLong(args[2]), Long.parseLong(args[3]), 0, bytes);
    MemorySegment dst = arena.allocate(bytes, 64);
    boolean announced = false;
    while (true) {
      var read = agent.read(List.of(region), List.of(dst), Duration.ofSeconds(30), null);
      if (!announced) {
        System.out.println("READING");
        System.out.flush();
        announced = true;
      }
      read.join();
    }
  }
}
