package dev.tandem.engine.builtin;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/** Tiny generated models for engine tests (vocabulary 256, 2 layers, hidden 64). */
final class TestModels {
  private TestModels() {}

  static ObjectNode tinyQwen3Config() {
    try (InputStream in = TestModels.class.getResourceAsStream("/dev/tandem/engine/models/tiny-qwen3.json")) {
      return (ObjectNode) new ObjectMapper().readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Path tinyQwen3(Path dir, DType dtype) {
    try {
      ModelGenerator.write(tinyQwen3Config(), dtype, 5, dir, 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return dir;
  }
}
