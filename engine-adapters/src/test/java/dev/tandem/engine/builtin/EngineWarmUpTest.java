package dev.tandem.engine.builtin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EngineWarmUpTest {
  @TempDir Path dir;

  /** The tiny model's engine with {@code blocks} KV blocks of 16 tokens and a budget of 128 tokens a step. */
  private static BuiltinEngine engine(Path model, int blocks) {
    long blockBytes = ModelConfig.read(model).kvBytesPerToken() * 16;
    return BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2).withKvCacheBytes(blocks * blockBytes).withBatching(16, 128, true));
  }

  @Test
  void measuresInPassesUntilTwoAgreeAndLeavesTheEngineEmpty() {
    try (BuiltinEngine engine = engine(TestModels.tinyQwen3(dir.resolve("tiny"), DType.BF16), 256)) {
      assertFalse(engine.prefillCost().known());

      int passes = engine.warmUp(256, 5);

      // A pass can only stop the warm-up by agreeing with the one before (a 2-layer model's
      // passes take milliseconds, far inside the budget), and there is a most.
      assertTrue(passes >= 2 && passes <= EngineWarmUp.MAX_PASSES, "passes: " + passes);
      assertTrue(engine.prefillCost().known(), "a prefill cost measured: " + engine.prefillCost());
      assertFalse(engine.hasWork());
      assertEquals(0, engine.pool().usedBlocks(), "every warm-up block back in the pool, none cached");
    }
  }

  /**
   * A probe measures attention at depth: its step prefills one token budget after a context it
   * imported without computing, so the step finds the whole context cached — else it would be an
   * ordinary long prompt, as slow to run as the ones the probe stands in for.
   */
  @Test
  void aProbePrefillsOneBudgetAfterAnImportedContextAndReachesFourTimesTheWarmUpsLength() {
    Path model = TestModels.tinyQwen3(dir.resolve("tiny"), DType.BF16);
    try (BuiltinEngine engine = engine(model, 256)) {
      assertEquals(1024, EngineWarmUp.probeDepth(engine, 256), "4 × the warm-up's length, within the pool's half");
      assertEquals(1024, EngineWarmUp.probe(engine, new SplittableRandom(1), 1024, "p"));
      assertFalse(engine.hasWork());
      assertEquals(0, engine.pool().usedBlocks(), "no block held once it is done (the context's stay cached, evictable)");
    }
    for (int blocks : new int[] {64, 32}) {
      try (BuiltinEngine small = engine(model, blocks)) {
        // Half the pool less one budget and a block, in whole blocks: 64 blocks of 16 tokens give
        // 368 (under 4 × 128); 32 give 112, no deeper than the prompts, so no probe.
        assertEquals(blocks == 64 ? 368 : 0, EngineWarmUp.probeDepth(small, 128), blocks + " blocks");
      }
    }
  }
}
