package dev.tandem.engine.builtin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EngineWarmUpTest {
  @TempDir Path dir;

  @Test
  void measuresInPassesUntilTwoAgreeAndLeavesTheEngineEmpty() {
    Path model = TestModels.tinyQwen3(dir.resolve("tiny"), DType.BF16);
    long blockBytes = ModelConfig.read(model).kvBytesPerToken() * 16;
    try (BuiltinEngine engine = BuiltinEngine.open(
        BuiltinConfig.of(model).withCompute("cpu", 2).withKvCacheBytes(256 * blockBytes).withBatching(16, 128, true))) {
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
}
