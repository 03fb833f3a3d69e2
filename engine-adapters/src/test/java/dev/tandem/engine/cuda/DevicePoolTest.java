package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The pool's bookkeeping. Device memory comes from a stand-in that records allocations and frees
 * (a GPU's allocator cannot run here); the tests on {@link EmulatedGpu} and, where a GPU is, on
 * {@link CudaDevice} use the pool with real memory.
 */
class DevicePoolTest {
  /** Hands out fresh addresses and remembers which are live. */
  private static final class Recorder implements DevicePool.Memory {
    final Set<Long> live = new HashSet<>();
    final List<Long> sizes = new ArrayList<>();
    long next = 1 << 20;
    int frees;

    @Override
    public long allocate(long bytes) {
      long address = next;
      next += bytes;
      live.add(address);
      sizes.add(bytes);
      return address;
    }

    @Override
    public void free(long address) {
      if (!live.remove(address)) {
        throw new AssertionError("freed twice or never allocated");
      }
      frees++;
    }
  }

  /** A pool over the recorder; its buffers never reach a device (the cases below copy nothing). */
  private static DevicePool pool(Recorder memory) {
    return new DevicePool(null, memory);
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
    try (DevicePool pool = pool(memory)) {
      DeviceBuffer a = pool.acquire(1000);
      long first = a.address();
      a.close();
      a.close(); // a second close gives nothing back twice
      DeviceBuffer b = pool.acquire(900); // same class (1,024)
      DeviceBuffer c = pool.acquire(1000); // the first is taken: a new allocation
      assertEquals(first, b.address());
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
    DevicePool pool = pool(memory);
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
    try (DevicePool pool = pool(memory)) {
      DeviceBuffer b = pool.acquire(256);
      assertThrows(IllegalArgumentException.class, () -> b.copyFrom(new float[65], 65));
      b.close();
      assertThrows(IllegalStateException.class, () -> b.copyTo(new float[1], 1));
    }
  }
}
