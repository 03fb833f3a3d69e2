package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * How a model directory says its embedding is pooled, as vLLM reads it: sentence-transformers'
 * {@code modules.json} and its Pooling module's {@code config.json} where the model has them (none:
 * the default pooling of the engine reading it — a decoder's last token, an encoder's CLS token, as
 * vLLM's), and whether the model was trained for truncated (Matryoshka) embeddings ({@code
 * config.json}'s {@code is_matryoshka} or {@code matryoshka_dimensions}), which OpenAI's {@code
 * dimensions} needs.
 *
 * @param mode the pooling, or null where the Pooling module asks for one not offered ({@code
 *     source} says which)
 * @param source where the pooling comes from: the Pooling module's file and field, or null for the default
 * @param otherModule a module of {@code modules.json} after the transformer that changes the
 *     vector (a {@code Dense} projection), by file and type; null: none (a {@code Normalize} is what
 *     {@code normalize} does)
 */
public record PoolingConfig(Mode mode, String source, boolean matryoshka, String otherModule) {
  private static final String POOLING_MODULE = "sentence_transformers.models.Pooling";
  private static final java.util.Set<String> PASSIVE_MODULES = java.util.Set.of(
      "sentence_transformers.models.Transformer", "sentence_transformers.models.Normalize", POOLING_MODULE);

  /** Which hidden states become the vector. */
  public enum Mode {
    /** The last token's ({@code pooling_mode_lasttoken}). */
    LAST("pooling_mode_lasttoken"),
    /** The first token's: BERT's {@code [CLS]} ({@code pooling_mode_cls_token}). */
    CLS("pooling_mode_cls_token"),
    /** The mean over the input's tokens ({@code pooling_mode_mean_tokens}). */
    MEAN("pooling_mode_mean_tokens"),
    /** Each dimension's largest value over the tokens ({@code pooling_mode_max_tokens}). */
    MAX("pooling_mode_max_tokens");

    public final String field;

    Mode(String field) {
      this.field = field;
    }
  }

  /** As {@link #read(Path, Mode)} for a decoder: its last token by default. */
  public static PoolingConfig read(Path dir) {
    return read(dir, Mode.LAST);
  }

  /**
   * Why an engine that pools the last token only cannot serve these embeddings (the file and
   * field naming another pooling, or a module that changes the vector), or null.
   */
  public String refusal() {
    if (otherModule != null) {
      return otherModule + " changes the pooled vector: Tandem serves the pooled vector itself";
    }
    return mode == Mode.LAST ? null : source + ", not '" + Mode.LAST.field + "': the built-in engine pools a decoder's last token only";
  }

  /**
   * @param dflt the pooling where the directory names none
   * @throws ModelFormatException naming the file that is not the JSON it should be
   */
  public static PoolingConfig read(Path dir, Mode dflt) {
    JsonNode config = json(dir.resolve("config.json"));
    boolean matryoshka = config != null
        && (config.path("is_matryoshka").asBoolean(false) || config.path("matryoshka_dimensions").size() > 0);
    JsonNode modules = json(dir.resolve("modules.json"));
    if (modules == null) {
      return new PoolingConfig(dflt, null, matryoshka, null);
    }
    if (!modules.isArray()) {
      throw new ModelFormatException(dir.resolve("modules.json") + ": not a JSON array of modules");
    }
    Mode mode = dflt;
    String source = null;
    String other = null;
    for (JsonNode module : modules) {
      String type = module.path("type").asText();
      if (POOLING_MODULE.equals(type)) {
        Path file = dir.resolve(module.path("path").asText("")).resolve("config.json");
        JsonNode pooling = json(file);
        if (pooling == null) {
          throw new ModelFormatException(dir.resolve("modules.json") + ": its Pooling module's " + file + " is missing");
        }
        List<String> on = new ArrayList<>();
        pooling.properties().forEach(e -> {
          if (e.getKey().startsWith("pooling_mode_") && e.getValue().asBoolean(false)) {
            on.add(e.getKey());
          }
        });
        mode = on.size() == 1 ? java.util.Arrays.stream(Mode.values()).filter(m -> m.field.equals(on.get(0))).findFirst().orElse(null) : null;
        source = file + " pools by " + (on.isEmpty() ? "no pooling mode it turns on" : on.stream().map(f -> "'" + f + "'").collect(
            java.util.stream.Collectors.joining(" and ")));
      } else if (!PASSIVE_MODULES.contains(type) && other == null) {
        other = dir.resolve("modules.json") + "'s module '" + module.path("path").asText("") + "' (" + type + ")";
      }
    }
    return new PoolingConfig(mode, source, matryoshka, other);
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
