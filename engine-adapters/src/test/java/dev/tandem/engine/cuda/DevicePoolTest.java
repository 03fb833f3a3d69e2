package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import jcuda.driver.CUdeviceptr;
import org.junit.jupiter.api.Test;

/**
 * The pool's bookkeeping. Device memory comes from a stand-in that records allocations and frees,
 * since no GPU runs here; the driver's allocator is exercised by the cuda conformance tests where
 * one does.
 */
class DevicePoolTest {
  /** Hands out fresh pointer objects and remembers which are live. */
  private static final class Recorder implements DevicePool.Memory {
    final Set<CUdeviceptr> live = Collections.newSetFromMap(new IdentityHashMap<>());
    final List<Long> sizes = new ArrayList<>();
    int frees;

    @Override
    public CUdeviceptr allocate(long bytes) {
      CUdeviceptr p = new CUdeviceptr();
      live.add(p);
      sizes.add(bytes);
      return p;
    }

    @Override
    public void free(CUdeviceptr pointer) {
      if (!live.remove(pointer)) {
        throw new AssertionError("freed twice or never allocated");
      }
      frees++;
    }
  }

  @Test
  void sizeClassesArePowersOfTwoFrom256() {
    assertEquals(256, DevicePool.sizeClass(1));
    assertEquals(256, DevicePool.sizeClass(256));
    assertEquals(512, DevicePool.sizeClass(257));
    assertEquals(1L << 30, DevicePool.sizeClass((1L << 30) - 5));
    assertThrows(IllegalArgumentException.class, () -> DevicePool.sizeClass(0));
  }

  @Test
  void aClosedBufferIsReusedBySameSizedRequests() {
    Recorder memory = new Recorder();
    try (DevicePool pool = new DevicePool(memory)) {
      DeviceBuffer a = pool.acquire(1000);
      CUdeviceptr first = a.pointer();
      a.close();
      a.close(); // a second close gives nothing back twice
      DeviceBuffer b = pool.acquire(900); // same class (1,024)
      DeviceBuffer c = pool.acquire(1000); // the first is taken: a new allocation
      assertSame(first, b.pointer());
      assertEquals(List.of(1024L, 1024L), memory.sizes);
      assertEquals(2, pool.outstanding());
      b.close();
      c.close();
      assertEquals(0, pool.outstanding());
      assertEquals(2048, pool.heldBytes());
    }
    assertEquals(0, memory.live.size(), "closing the pool frees everything it allocated");
    assertEquals(2, memory.frees);
  }

  @Test
  void longLivedBuffersGoBackToTheDriverAndThePoolFreesWhatIsStillOut() {
    Recorder memory = new Recorder();
    DevicePool pool = new DevicePool(memory);
    DeviceBuffer weights = pool.allocate(12_345);
    DeviceBuffer scratch = pool.acquire(64);
    assertEquals(12_345, weights.bytes());
    weights.close();
    assertEquals(1, memory.frees, "a long-lived buffer is freed when closed");
    pool.close(); // scratch was never given back: freed with the pool
    assertEquals(0, memory.live.size());
    scratch.close(); // after the pool: nothing freed twice
    assertEquals(2, memory.frees);
    assertThrows(IllegalStateException.class, () -> pool.acquire(1));
  }

  @Test
  void aBufferRefusesCopiesPastItsEndAndAfterClose() {
    Recorder memory = new Recorder();
    try (DevicePool pool = new DevicePool(memory)) {
      DeviceBuffer b = pool.acquire(256);
      assertThrows(IllegalArgumentException.class, () -> b.copyFrom(new float[65], 65));
      b.close();
      assertThrows(IllegalStateException.class, () -> b.copyTo(new float[1], 1));
    }
  }
}
