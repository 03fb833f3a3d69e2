package dev.tandem.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The line {@link LinkProbe#pullShaped} fits through its two pull sizes. */
class PullCostFitTest {
  @Test
  void twoConsistentPullsGiveTheirLine() {
    // 2 ms fixed, 1 GB/s: 4 MiB in 6.19 ms, 64 MiB in 69.1 ms.
    long small = 4L << 20;
    long large = 64L << 20;
    LinkProbe.PullCost c = LinkProbe.PullCost.fit("tcp", small, 0.002 + small / 1e9, large, 0.002 + large / 1e9);
    assertEquals(1e9, c.bytesPerSecond(), 1e3);
    assertEquals(0.002, c.fixedSeconds(), 1e-9);
  }

  /**
   * Seen on a 16 Mbit/s tc-shaped link (benchmarks/scripts/kv_dtype.sh, case slow-auto): the small
   * pull stalled for about as long as the large one took, the slope came out at 8.9e14 bytes/s, and
   * the router predicted a 57 MB pull in 0.56 s that took 28.6 s.
   */
  @Test
  void aSmallPullThatStalledDoesNotMakeTheLinkLookInfinitelyFast() {
    long small = 262_144;
    long large = 16 * small;
    LinkProbe.PullCost c = LinkProbe.PullCost.fit("tcp", small, 0.5587, large, 0.5590);
    assertEquals(large / 0.5590, c.bytesPerSecond(), 1.0, "the large pull's own average");
    assertEquals(0, c.fixedSeconds());
    assertEquals(0.5590, c.seconds(large), 1e-9, "the large pull is predicted as it went");
  }
}
