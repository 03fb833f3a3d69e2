package dev.tandem.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.model.ModelFormatException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a model card carries from config.json: a sequence classifier's class names, in id order. */
class ModelFilesTest {
  @TempDir Path dir;

  private List<String> labels(String config) throws Exception {
    Files.writeString(dir.resolve("config.json"), config);
    return ModelFiles.labels(dir.resolve("config.json"));
  }

  @Test
  void aSequenceClassifiersLabelsComeInIdOrder() throws Exception {
    assertEquals(List.of("negative", "neutral", "positive"), labels("{\"architectures\": [\"Qwen3ForSequenceClassification\"], "
        + "\"id2label\": {\"2\": \"positive\", \"0\": \"negative\", \"1\": \"neutral\"}}"));
    assertEquals(List.of(), labels("{\"architectures\": [\"Qwen3ForCausalLM\"], \"id2label\": {\"0\": \"LABEL_0\"}}"),
        "a causal model's id2label (transformers writes one for every model) names no classes");
    assertEquals(List.of(), labels("{\"architectures\": [\"Qwen3ForSequenceClassification\"]}"), "none named");
    assertEquals(List.of(), ModelFiles.labels(dir.resolve("absent.json")));
    String bad = assertThrows(ModelFormatException.class, () -> labels("{\"architectures\": [\"LlamaForSequenceClassification\"], "
        + "\"id2label\": {\"first\": \"a\"}}")).getMessage();
    assertTrue(bad.contains("field 'id2label' has key 'first'"), bad);
  }
}
