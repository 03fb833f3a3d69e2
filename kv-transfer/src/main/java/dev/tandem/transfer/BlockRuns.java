package dev.tandem.transfer;

import java.util.ArrayList;
import java.util.List;

/**
 * Maximal runs of block pairs that are consecutive on both sides, so that a block-by-block copy
 * becomes one descriptor per run: a fresh KV pool hands out consecutive blocks, and the per-read
 * cost of thousands of block-sized descriptors otherwise dominates the transfer (KvPullCost).
 */
public final class BlockRuns {
  /** Blocks {@code [from, from + length)} on the source side go to {@code [to, to + length)}. */
  public record Run(int from, int to, int length) {}

  private BlockRuns() {}

  /** Runs of {@code from[i] → to[i]} for i in {@code [start, from.length)}. */
  public static List<Run> of(int[] from, int[] to, int start) {
    if (from.length != to.length) {
      throw new IllegalArgumentException("block lists differ in length: " + from.length + " vs " + to.length);
    }
    List<Run> runs = new ArrayList<>();
    int i = start;
    while (i < from.length) {
      int j = i + 1;
      while (j < from.length && from[j] == from[j - 1] + 1 && to[j] == to[j - 1] + 1) {
        j++;
      }
      runs.add(new Run(from[i], to[i], j - i));
      i = j;
    }
    return runs;
  }
}
