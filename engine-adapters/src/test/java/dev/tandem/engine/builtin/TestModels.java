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

  /**
   * {@code causal}'s files copied to {@code dir} and changed into a sequence classifier's
   * checkpoint, as transformers saves one: {@code config.json}'s {@code config} (the architecture
   * then {@code Qwen3ForSequenceClassification}, with {@code num_labels}) and a {@code score.weight}
   * of {@code head} (labels, hidden) in a shard of its own beside the body's, which an index names.
   */
  static Path sequenceClassifier(Path causal, Path dir, float[][] head) throws IOException {
    java.nio.file.Files.createDirectories(dir);
    try (var files = java.nio.file.Files.list(causal)) {
      for (Path f : files.toList()) {
        java.nio.file.Files.copy(f, dir.resolve(f.getFileName()));
      }
    }
    ObjectMapper json = new ObjectMapper();
    ObjectNode config = (ObjectNode) json.readTree(dir.resolve("config.json").toFile());
    config.putArray("architectures").add("Qwen3ForSequenceClassification");
    config.put("num_labels", head.length);
    json.writeValue(dir.resolve("config.json").toFile(), config);
    int[] k = {0};
    int hidden = head[0].length;
    new dev.tandem.engine.modeltools.SafetensorsWriter()
        .add("score.weight", DType.F32, new long[] {head.length, hidden}, () -> head[k[0] / hidden][k[0]++ % hidden])
        .write(dir.resolve("score.safetensors"));
    ObjectNode index = json.createObjectNode();
    ObjectNode map = index.putObject("weight_map");
    try (var body = dev.tandem.engine.model.SafetensorsFile.open(dir.resolve("model.safetensors"))) {
      body.tensors().keySet().forEach(name -> map.put(name, "model.safetensors"));
    }
    map.put("score.weight", "score.safetensors");
    json.writeValue(dir.resolve("model.safetensors.index.json").toFile(), index);
    return dir;
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
