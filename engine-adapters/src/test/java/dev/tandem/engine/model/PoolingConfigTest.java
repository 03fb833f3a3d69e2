package dev.tandem.engine.model;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a model directory's sentence-transformers files and config.json say about serving its embeddings. */
class PoolingConfigTest {
  @TempDir Path dir;

  private void write(String file, String json) throws Exception {
    Files.createDirectories(dir.resolve(file).getParent());
    Files.writeString(dir.resolve(file), json);
  }

  private static final String MODULES = "[{\"idx\":0,\"name\":\"0\",\"path\":\"\",\"type\":\"sentence_transformers.models.Transformer\"},"
      + "{\"idx\":1,\"name\":\"1\",\"path\":\"1_Pooling\",\"type\":\"sentence_transformers.models.Pooling\"},"
      + "{\"idx\":2,\"name\":\"2\",\"path\":\"2_Normalize\",\"type\":\"sentence_transformers.models.Normalize\"}]";

  @Test
  void aDecoderWithoutSentenceTransformersFilesPoolsItsLastToken() throws Exception {
    write("config.json", "{\"hidden_size\": 64}");
    PoolingConfig c = PoolingConfig.read(dir);
    assertNull(c.refusal());
    assertFalse(c.matryoshka());
  }

  @Test
  void lastTokenPoolingServesAndMeanPoolingIsRefusedNamingTheFileAndField() throws Exception {
    write("config.json", "{\"matryoshka_dimensions\": [32, 64]}");
    write("modules.json", MODULES);
    write("1_Pooling/config.json", "{\"word_embedding_dimension\": 64, \"pooling_mode_lasttoken\": true}");
    PoolingConfig last = PoolingConfig.read(dir);
    assertNull(last.refusal(), "Qwen3-Embedding's files");
    assertTrue(last.matryoshka(), "matryoshka_dimensions given");
    write("1_Pooling/config.json", "{\"pooling_mode_cls_token\": false, \"pooling_mode_mean_tokens\": true}");
    String refusal = PoolingConfig.read(dir).refusal();
    assertTrue(refusal.contains("1_Pooling/config.json") && refusal.contains("pooling_mode_mean_tokens"), refusal);
  }

  @Test
  void filesThatAreNotTheirJsonAreErrorsNamingThem() throws Exception {
    write("config.json", "{\"is_matryoshka\": true}");
    write("modules.json", "{\"not\": \"a list\"}");
    assertTrue(assertThrows(ModelFormatException.class, () -> PoolingConfig.read(dir)).getMessage().contains("modules.json"));
    write("modules.json", MODULES);
    assertTrue(assertThrows(ModelFormatException.class, () -> PoolingConfig.read(dir)).getMessage().contains("1_Pooling"),
        "its Pooling module's config is missing");
    write("1_Pooling/config.json", "{broken");
    assertTrue(assertThrows(ModelFormatException.class, () -> PoolingConfig.read(dir)).getMessage().contains("not valid JSON"));
  }
}
