package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.tandem.engine.EngineRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The model `tandem serve` runs with no arguments: created once, reused, and it generates. */
@org.junit.jupiter.api.Tag("e2e")
class DefaultModelTest {
  @Test
  void isCreatedOnceAndServesTokens(@TempDir Path cache) throws Exception {
    Path dir = DefaultModel.ensure(cache);
    assertEquals(cache.resolve("models").resolve(DefaultModel.NAME), dir);
    long written = Files.getLastModifiedTime(dir.resolve("model.safetensors")).toMillis();
    assertEquals(dir, DefaultModel.ensure(cache));
    assertEquals(written, Files.getLastModifiedTime(dir.resolve("model.safetensors")).toMillis(), "reused, not rewritten");
    try (var files = Files.list(cache.resolve("models"))) {
      assertEquals(1, files.count(), "no temporary directory left behind");
    }

    assertEquals(ModelConfig.Architecture.QWEN3, ModelConfig.read(dir).architecture());
    try (BuiltinEngine engine = BuiltinEngine.open(BuiltinConfig.of(dir).withKvCacheBytes(16L << 20))) {
      engine.add(new EngineRequest("r", new int[] {9707, 11, 847}, SamplingParams.greedy(), StopConditions.maxTokens(3)));
      int tokens = 0;
      dev.tandem.common.FinishReason finish = null;
      while (engine.hasWork()) {
        for (var output : engine.step()) {
          tokens += output.newTokens().length; // an output may carry several tokens, or none
          if (output.finished()) {
            finish = output.finishReason();
          }
        }
      }
      assertEquals(3, tokens);
      assertEquals(dev.tandem.common.FinishReason.LENGTH, finish, "stopped by max_tokens");
      assertFalse(engine.hasWork());
    }
  }
}
