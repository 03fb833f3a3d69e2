package dev.tandem.engine.cuda;

import java.util.Arrays;
import java.util.function.IntPredicate;

/**
 * How a step's query rows go through attention: runs of two or more consecutive positions of one
 * sequence (prefill chunks) in tiles of up to 32 rows for the tiled kernel, each tile a pair
 * (first row, row count); every other row (decode tokens) alone through the per-row kernel. Heads
 * past the tiled kernel's 128 dims take the per-row kernel for every row.
 */
public record AttentionPlan(int[] tiles, int[] singles) {
  /** Rows a tile of the tiled kernel holds ({@code PREFILL_ROWS} in tandem.cu). */
  public static final int TILE_ROWS = 32;
  /** The largest head the tiled kernel holds ({@code PREFILL_MAX_HEAD}). */
  public static final int TILED_MAX_HEAD = 128;

  /**
   * The plan for {@code rows} rows, where {@code continuesPrevious.test(t)} says row t is the next
   * position of row t - 1's sequence.
   */
  public static AttentionPlan of(int rows, IntPredicate continuesPrevious, int headDim) {
    int[] tiles = new int[2 * rows];
    int[] singles = new int[rows];
    int tileInts = 0;
    int singleCount = 0;
    int t = 0;
    while (t < rows) {
      int end = t + 1;
      while (end < rows && continuesPrevious.test(end)) {
        end++;
      }
      if (end - t < 2 || headDim > TILED_MAX_HEAD) {
        for (int r = t; r < end; r++) {
          singles[singleCount++] = r;
        }
      } else {
        for (int first = t; first < end; first += TILE_ROWS) {
          tiles[tileInts++] = first;
          tiles[tileInts++] = Math.min(TILE_ROWS, end - first);
        }
      }
      t = end;
    }
    return new AttentionPlan(Arrays.copyOf(tiles, tileInts), Arrays.copyOf(singles, singleCount));
  }

  /** Tiles for the tiled kernel. */
  public int tileCount() {
    return tiles.length / 2;
  }
}
