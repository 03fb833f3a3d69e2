package dev.tandem.router.index;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tandem.common.WorkerId;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ApproximateIndexTest {
  private static final WorkerId W = new WorkerId("w");
  private static final WorkerId V = new WorkerId("v");

  @Test
  void remembersRoutedPrefixesUntilTheirTtl() {
    AtomicLong now = new AtomicLong();
    ApproximateIndex idx = new ApproximateIndex(120, 100, now::get);
    idx.record(W, new long[] {1, 2, 3});
    idx.record(V, new long[] {1, 9});
    assertEquals(Map.of(W, new Overlap(3, 0, 0), V, new Overlap(1, 0, 0)), idx.overlaps(new long[] {1, 2, 3}));
    now.set(121);
    assertEquals(Map.of(), idx.overlaps(new long[] {1, 2, 3}));
  }

  @Test
  void boundedSizeForgetsTheLeastRecentlyRouted() {
    ApproximateIndex idx = new ApproximateIndex(1_000, 3, () -> 0);
    idx.record(W, new long[] {1, 2});
    idx.record(V, new long[] {7, 8});
    assertEquals(3, idx.size());
    assertEquals(Map.of(), idx.overlaps(new long[] {1, 2}));
    assertEquals(Map.of(V, new Overlap(2, 0, 0)), idx.overlaps(new long[] {7, 8}));
    assertEquals(1, idx.blockCount(W), "one of W's blocks was forgotten for size");
    assertEquals(2, idx.blockCount(V));
  }
}
