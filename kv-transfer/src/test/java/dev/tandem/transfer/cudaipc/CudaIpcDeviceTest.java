package dev.tandem.transfer.cudaipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.RegisteredMemory;
import dev.tandem.transfer.TransferAgent;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * cuda-ipc on a real GPU, between two processes (an IPC handle cannot be opened by the process that
 * made it) and within one: the bytes a second JVM put in its GPU memory arrive in this one's, whole
 * and in 1,000 reversed slices; a wrong key is refused; the owner killed fails the next read and
 * this agent closes cleanly. Prints the copy rate of 256 MiB reads (the device check collects it).
 * Skipped, with the driver's reason, where no CUDA device initialises (here: no GPU).
 */
class CudaIpcDeviceTest {
  private static final long REGION = 256L << 20;
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private Process owner;
  private Arena arena;

  /** Fills {@code s} with bytes from {@code seed}. */
  static void pattern(MemorySegment s, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
      s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
    }
  }

  @BeforeEach
  void needsAGpu() {
    String reason = CudaDeviceMemory.unavailableReason();
    assumeTrue(reason == null, "no CUDA device: " + reason);
    arena = Arena.ofShared();
  }

  @AfterEach
  void stop() {
    if (owner != null) {
      owner.destroyForcibly();
    }
    if (arena != null) {
      arena.close();
    }
  }

  /**
   * This JVM's class path and the URLs of the loaders above this class: JUnit's console launcher (as
   * the device check runs it) loads the tests from a class loader of its own, not the class path.
   */
  static String classPath() throws Exception {
    Set<String> entries = new LinkedHashSet<>(List.of(System.getProperty("java.class.path").split(File.pathSeparator)));
    for (ClassLoader l = CudaIpcDeviceTest.class.getClassLoader(); l != null; l = l.getParent()) {
      if (l instanceof URLClassLoader u) {
        for (URL url : u.getURLs()) {
          entries.add(Path.of(url.toURI()).toString());
        }
      }
    }
    return String.join(File.pathSeparator, entries);
  }

  private MemoryDescriptor startOwner() throws Exception {
    List<String> command = List.of(ProcessHandle.current().info().command().orElseThrow(), "--enable-native-access=ALL-UNNAMED",
        "-cp", classPath(), CudaIpcOwnerProcess.class.getName(), Long.toString(REGION));
    owner = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String[] ready = new BufferedReader(new InputStreamReader(owner.getInputStream())).readLine().split(" ");
    assertEquals("READY", ready[0]);
    return new MemoryDescriptor(ready[1], Long.parseLong(ready[2]), Long.parseLong(ready[3]), 0, REGION);
  }

  private MemorySegment back(MemorySegment device, long bytes) {
    MemorySegment host = arena.allocate(bytes, 64);
    DeviceBytes.read(host, device.address());
    return host;
  }

  @Test
  void anotherProcesssGpuMemoryArrivesWholeAndInSlices() throws Exception {
    MemoryDescriptor region = startOwner();
    MemorySegment expected = arena.allocate(REGION, 64);
    pattern(expected, 42);
    try (CudaIpcTransferAgent reader = CudaIpcTransferAgent.open(); TransferAgent.Landing into = reader.landing(REGION)) {
      reader.read(List.of(region), List.of(into.segment()), TIMEOUT, null).get(60, TimeUnit.SECONDS);
      assertEquals(-1, expected.mismatch(back(into.segment(), REGION)), "the whole region");
      double best = Double.MAX_VALUE;
      for (int i = 0; i < 5; i++) {
        long t0 = System.nanoTime();
        reader.read(List.of(region), List.of(into.segment()), TIMEOUT, null).get(60, TimeUnit.SECONDS);
        best = Math.min(best, (System.nanoTime() - t0) / 1e9);
      }
      System.out.printf("cuda-ipc read of %d MiB between two processes: best %.3f ms, %.1f GB/s%n", REGION >> 20, best * 1e3,
          REGION / best / 1e9);

      int n = 1000;
      List<MemoryDescriptor> remote = new ArrayList<>();
      List<MemorySegment> local = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        remote.add(region.slice((long) (n - 1 - i) * 4096, 4096));
        local.add(into.segment().asSlice((long) i * 4096, 4096));
      }
      reader.read(remote, local, TIMEOUT, null).get(60, TimeUnit.SECONDS);
      MemorySegment got = back(into.segment(), (long) n * 4096);
      for (int i = 0; i < n; i++) {
        assertEquals(-1, expected.asSlice((long) (n - 1 - i) * 4096, 4096).mismatch(got.asSlice((long) i * 4096, 4096)), "slice " + i);
      }

      var refused = assertThrows(ExecutionException.class, () -> reader.read(
          List.of(new MemoryDescriptor(region.agentAddress(), region.regionId(), region.key() + 1, 0, 4096)),
          List.of(into.segment().asSlice(0, 4096)), TIMEOUT, null).get(30, TimeUnit.SECONDS));
      assertTrue(refused.getCause().getMessage().contains("key"), refused.getCause().getMessage());

      owner.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      assertThrows(ExecutionException.class, () -> reader.read(List.of(region.slice(0, 4096)), List.of(into.segment().asSlice(0, 4096)),
          TIMEOUT, null).get(30, TimeUnit.SECONDS));
    }
  }

  @Test
  void twoAgentsOfOneProcessReadAtTheirOwnAddresses() throws Exception {
    try (CudaIpcTransferAgent a = CudaIpcTransferAgent.open(); CudaIpcTransferAgent b = CudaIpcTransferAgent.open();
        TransferAgent.Landing into = b.landing(1 << 20)) {
      RegisteredMemory src = a.allocate(1 << 20);
      MemorySegment bytes = arena.allocate(1 << 20, 64);
      pattern(bytes, 7);
      DeviceBytes.write(src.segment().address(), bytes);
      b.read(List.of(src.descriptor()), List.of(into.segment()), TIMEOUT, null).get(30, TimeUnit.SECONDS);
      assertEquals(-1, bytes.mismatch(back(into.segment(), 1 << 20)));
    }
  }
}
