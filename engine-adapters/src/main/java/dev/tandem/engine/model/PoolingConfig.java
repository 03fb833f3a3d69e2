package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How a model directory says its embedding is pooled, as vLLM reads it: sentence-transformers'
 * {@code modules.json} and its Pooling module's {@code config.json} where the model has them (none:
 * the last token, vLLM's default for embeddings), and whether the model was trained for truncated
 * (Matryoshka) embeddings ({@code config.json}'s {@code is_matryoshka} or {@code
 * matryoshka_dimensions}), which OpenAI's {@code dimensions} needs. {@code refusal}: why this
 * model's embeddings cannot be served (the file and field naming a pooling other than the last
 * token's), or null.
 */
public record PoolingConfig(String refusal, boolean matryoshka) {
  private static final String POOLING_MODULE = "sentence_transformers.models.Pooling";

  /**
   * @throws ModelFormatException naming the file that is not the JSON it should be
   */
  public static PoolingConfig read(Path dir) {
    JsonNode config = json(dir.resolve("config.json"));
    boolean matryoshka = config != null
        && (config.path("is_matryoshka").asBoolean(false) || config.path("matryoshka_dimensions").size() > 0);
    JsonNode modules = json(dir.resolve("modules.json"));
    if (modules == null) {
      return new PoolingConfig(null, matryoshka);
    }
    if (!modules.isArray()) {
      throw new ModelFormatException(dir.resolve("modules.json") + ": not a JSON array of modules");
    }
    for (JsonNode module : modules) {
      if (POOLING_MODULE.equals(module.path("type").asText())) {
        Path file = dir.resolve(module.path("path").asText("")).resolve("config.json");
        JsonNode pooling = json(file);
        if (pooling == null) {
          throw new ModelFormatException(dir.resolve("modules.json") + ": its Pooling module's " + file + " is missing");
        }
        if (!pooling.path("pooling_mode_lasttoken").asBoolean(false)) {
          return new PoolingConfig(file + " pools by " + mode(pooling) + ", not 'pooling_mode_lasttoken': Tandem pools the last token only",
              matryoshka);
        }
      }
    }
    return new PoolingConfig(null, matryoshka);
  }

  /** The pooling a Pooling module's config turns on, by its field's name. */
  private static String mode(JsonNode pooling) {
    var names = pooling.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (name.startsWith("pooling_mode_") && pooling.get(name).asBoolean(false)) {
        return "'" + name + "'";
      }
    }
    return "no pooling mode it turns on";
  }

  /**
   * A model directory's JSON file, or null when there is no such file (the one reader of
   * pooling's, the classifier's and the model card's optional files).
   *
   * @throws ModelFormatException naming the file when it is not JSON
   */
  public static JsonNode json(Path file) {
    if (!Files.isRegularFile(file)) {
      return null;
    }
    try {
      return new ObjectMapper().readTree(file.toFile());
    } catch (IOException e) {
      throw new ModelFormatException(file + ": not valid JSON: " + e.getMessage());
    }
  }
}
