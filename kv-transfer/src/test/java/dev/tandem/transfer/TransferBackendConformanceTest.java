package dev.tandem.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** What every transfer backend must do; each backend's test extends this. */
public abstract class TransferBackendConformanceTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  protected Arena arena;
  protected TransferAgent owner;
  protected TransferAgent reader;

  /** A fresh agent of the backend under test. */
  protected abstract TransferAgent newAgent();

  @BeforeEach
  void agents() {
    arena = Arena.ofShared();
    owner = newAgent();
    reader = newAgent();
  }

  /** Agents may be missing: a backend whose library is absent skips the test in {@link #agents}. */
  @AfterEach
  void close() {
    if (reader != null) {
      reader.close();
    }
    if (owner != null) {
      owner.close();
    }
    arena.close();
  }

  protected MemorySegment random(long bytes, long seed) {
    MemorySegment s = arena.allocate(bytes, 64);
    SplittableRandom r = new SplittableRandom(seed);
    for (long i = 0; i + 8 <= bytes; i += 8) {
      s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
    }
    for (long i = bytes & ~7L; i < bytes; i++) {
      s.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
    }
    return s;
  }

  @ParameterizedTest(name = "{0} bytes")
  @ValueSource(longs = {4 << 10, 1 << 20, 16 << 20})
  void readsEveryByteOfOneRegion(long bytes) throws Exception {
    readOneRegion(bytes);
  }

  @ParameterizedTest(name = "{0} bytes")
  @ValueSource(longs = {64 << 20, 256 << 20})
  @Tag("large") // touches up to 512 MiB (~2.5 s a backend, half of it page faults): the full tier, not -Pfast
  void readsEveryByteOfALargeRegion(long bytes) throws Exception {
    readOneRegion(bytes);
  }

  private void readOneRegion(long bytes) throws Exception {
    MemorySegment src = random(bytes, bytes);
    MemoryDescriptor d = owner.register(src);
    MemorySegment dst = arena.allocate(bytes, 64);
    reader.read(List.of(d), List.of(dst), TIMEOUT, null).get(60, TimeUnit.SECONDS);
    assertEquals(-1, src.mismatch(dst));
  }

  @ParameterizedTest(name = "{0} bytes")
  @ValueSource(longs = {4 << 10, 16 << 20})
  void memoryTheAgentAllocatedIsReadLikeRegisteredMemory(long bytes) throws Exception {
    readAgentAllocated(bytes);
  }

  @Test
  @Tag("large") // the full tier, not -Pfast
  void largeMemoryTheAgentAllocatedIsReadLikeRegisteredMemory() throws Exception {
    readAgentAllocated(64 << 20);
  }

  private void readAgentAllocated(long bytes) throws Exception {
    RegisteredMemory src = owner.allocate(bytes);
    assertEquals(bytes, src.segment().byteSize());
    assertEquals(0, src.segment().address() % 64);
    src.segment().copyFrom(random(bytes, 11));
    MemorySegment dst = arena.allocate(bytes, 64);
    reader.read(List.of(src.descriptor().slice(0, bytes)), List.of(dst), TIMEOUT, null).get(60, TimeUnit.SECONDS);
    assertEquals(-1, src.segment().mismatch(dst));
    // The owner's writes after a read are seen by the next one.
    src.segment().fill((byte) 42);
    reader.read(List.of(src.descriptor().slice(bytes - 4096, 4096)), List.of(dst.asSlice(0, 4096)), TIMEOUT, null)
        .get(60, TimeUnit.SECONDS);
    assertEquals(-1, src.segment().asSlice(0, 4096).mismatch(dst.asSlice(0, 4096)));
  }

  @Test
  void manyDescriptorsLandInOrderAndEachIsReported() throws Exception {
    int n = 1000;
    MemorySegment src = random(n * 4096L, 7);
    MemoryDescriptor region = owner.register(src);
    List<MemoryDescriptor> remote = new ArrayList<>();
    List<MemorySegment> local = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      // Reverse order, to catch pairing mistakes.
      remote.add(region.slice((long) (n - 1 - i) * 4096, 4096));
      local.add(arena.allocate(4096));
    }
    Set<Integer> done = ConcurrentHashMap.newKeySet();
    reader.read(remote, local, TIMEOUT, done::add).get(60, TimeUnit.SECONDS);
    assertEquals(n, done.size());
    for (int i = 0; i < n; i++) {
      assertEquals(-1, src.asSlice((long) (n - 1 - i) * 4096, 4096).mismatch(local.get(i)), "descriptor " + i);
    }
  }

  @Test
  void concurrentTransfersDoNotMixBytes() throws Exception {
    List<CompletableFuture<Void>> all = new ArrayList<>();
    List<MemorySegment[]> pairs = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      MemorySegment src = random(1 << 20, 100 + i);
      MemorySegment dst = arena.allocate(1 << 20);
      pairs.add(new MemorySegment[] {src, dst});
      all.add(reader.read(List.of(owner.register(src)), List.of(dst), TIMEOUT, null));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    for (MemorySegment[] p : pairs) {
      assertEquals(-1, p[0].mismatch(p[1]));
    }
  }

  @Test
  void badDescriptorsFailClearly() {
    MemoryDescriptor d = owner.register(random(4096, 1));
    MemorySegment dst = arena.allocate(4096);
    var unknown = assertThrows(ExecutionException.class, () -> reader.read(
        List.of(new MemoryDescriptor(d.agentAddress(), 999_999, d.key(), 0, 4096)), List.of(dst), TIMEOUT, null).get(10, TimeUnit.SECONDS));
    assertTrue(unknown.getCause().getMessage().contains("999999"), unknown.getCause().getMessage());
    var outside = assertThrows(ExecutionException.class, () -> reader.read(
        List.of(new MemoryDescriptor(d.agentAddress(), d.regionId(), d.key(), 2048, 4096)), List.of(dst), TIMEOUT, null).get(10, TimeUnit.SECONDS));
    assertTrue(outside.getCause().getMessage().contains("outside"), outside.getCause().getMessage());
    owner.deregister(d);
    assertThrows(ExecutionException.class, () -> reader.read(List.of(d), List.of(dst), TIMEOUT, null).get(10, TimeUnit.SECONDS));
    assertThrows(IllegalArgumentException.class, () -> reader.read(List.of(d), List.of(arena.allocate(10)), TIMEOUT, null));
  }

  @Test
  void aRegionIsReadOnlyWithItsKey() throws Exception {
    MemorySegment src = random(4096, 3);
    MemoryDescriptor d = owner.register(src);
    MemorySegment dst = arena.allocate(4096);
    // Knowing the agent and the (sequential) region id is not enough: the key is the capability.
    for (long guess : new long[] {0, d.key() + 1, d.key() ^ Long.MIN_VALUE}) {
      var refused = assertThrows(ExecutionException.class, () -> reader.read(
          List.of(new MemoryDescriptor(d.agentAddress(), d.regionId(), guess, 0, 4096)), List.of(dst), TIMEOUT, null).get(10, TimeUnit.SECONDS));
      assertTrue(refused.getCause().getMessage().contains("key"), refused.getCause().getMessage());
    }
    assertEquals(0, dst.get(ValueLayout.JAVA_LONG, 0), "nothing was written by a refused read");
    reader.read(List.of(d), List.of(dst), TIMEOUT, null).get(10, TimeUnit.SECONDS);
    assertEquals(-1, src.mismatch(dst));
    assertTrue(d.key() != owner.register(random(64, 4)).key(), "every region draws its own key");
  }

  @Test
  @Tag("large") // 256 MiB being read when the owner closes: the full tier, not -Pfast
  void aPeerThatDiesMidTransferFailsTheReadAndNothingHangs() throws Exception {
    int n = 64;
    MemorySegment src = random(n * (4L << 20), 3);
    MemoryDescriptor region = owner.register(src);
    List<MemoryDescriptor> remote = new ArrayList<>();
    List<MemorySegment> local = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      remote.add(region.slice(i * (4L << 20), 4 << 20));
      local.add(arena.allocate(4 << 20));
    }
    CompletableFuture<Void> read = reader.read(remote, local, TIMEOUT, i -> {
      if (i == 0) {
        owner.close();
      }
    });
    var e = assertThrows(ExecutionException.class, () -> read.get(20, TimeUnit.SECONDS));
    assertTrue(e.getCause() != null);
  }
}
