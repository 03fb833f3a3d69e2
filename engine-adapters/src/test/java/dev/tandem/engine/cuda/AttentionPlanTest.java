package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Which rows take the tiled attention kernel and which go alone, by hand. */
class AttentionPlanTest {
  @Test
  void decodeRowsGoAloneAndPrefillRunsAreTiledBy32() {
    // Rows: a decode token, a 70-row prefill chunk, two more decode tokens, a 2-row chunk.
    boolean[] continues = new boolean[75];
    for (int t = 2; t < 71; t++) {
      continues[t] = true; // rows 1..70 are one run
    }
    continues[74] = true; // rows 73..74
    AttentionPlan plan = AttentionPlan.of(75, t -> continues[t], 128);
    assertArrayEquals(new int[] {0, 71, 72}, plan.singles());
    assertArrayEquals(new int[] {1, 32, 33, 32, 65, 6, 73, 2}, plan.tiles());
    assertEquals(4, plan.tileCount());
  }

  @Test
  void aPureDecodeStepIsAllSinglesAndWideHeadsNeverTile() {
    assertArrayEquals(new int[] {0, 1, 2}, AttentionPlan.of(3, t -> false, 128).singles());
    AttentionPlan wide = AttentionPlan.of(40, t -> true, 256);
    assertEquals(40, wide.singles().length);
    assertEquals(0, wide.tileCount());
  }

  @Test
  void fewDecodeRowsSplitTheirContextUpToEightWays() {
    assertEquals(8, LaunchShapes.attentionSplits(1, 16)); // batch 1, 16 heads: 128 blocks
    assertEquals(2, LaunchShapes.attentionSplits(8, 16)); // 256 / 128
    assertEquals(1, LaunchShapes.attentionSplits(32, 16)); // 512 blocks already
    assertEquals(8, LaunchShapes.attentionSplits(1, 2));
    assertEquals(new LaunchShapes.Shape(1, 128, 128), LaunchShapes.attention(1, 16, 128, 8));
    // Every split step's parts fit the partials buffer.
    for (int rows = 1; rows <= 300; rows++) {
      for (int heads : new int[] {1, 2, 8, 14, 16, 32, 64}) {
        int splits = LaunchShapes.attentionSplits(rows, heads);
        if (splits > 1) {
          assertTrue((long) rows * heads * splits * (LaunchShapes.MAX_HEAD_DIM + 2) <= LaunchShapes.PARTIAL_FLOATS,
              rows + " rows × " + heads + " heads");
        }
      }
    }
  }

  @Test
  void tiledLaunchesCoverEachTileAndHeadAndRefuseWideHeads() {
    assertEquals(new LaunchShapes.Shape(64, 16, 128), LaunchShapes.attentionTiled(64, 16, 128));
    assertThrows(IllegalArgumentException.class, () -> LaunchShapes.attentionTiled(1, 8, 256));
  }
}
