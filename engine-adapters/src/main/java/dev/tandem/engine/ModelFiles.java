package dev.tandem.engine;

import dev.tandem.common.GenerationConfig;
import dev.tandem.engine.model.GenerationConfigFile;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The files of the model a worker serves that travel in the model card: {@code tokenizer.json},
 * {@code tokenizer_config.json}, {@code chat_template.jinja} (where recent transformers releases
 * write the chat template instead of tokenizer_config.json; empty when there is none) and what
 * {@code generation_config.json} sets (checked here) of a Hugging Face model directory, or the
 * bundled Qwen3 tokenizer (Apache-2.0; see the README beside it in the resources) with no
 * generation config. {@code labels}: a sequence classifier's class names, by id ({@code config.json}'s
 * {@code id2label}; empty for any other model, or where the file names none).
 */
public record ModelFiles(
    String source, byte[] tokenizerJson, byte[] tokenizerConfigJson, String chatTemplateJinja, GenerationConfig generation,
    java.util.List<String> labels) {
  public ModelFiles {
    labels = java.util.List.copyOf(labels);
  }

  private static final String BUNDLED = "/dev/tandem/engine/models/qwen3-tokenizer/";

  /** The real Qwen3 tokenizer shipped inside this jar. */
  public static ModelFiles bundledQwen3() {
    return new ModelFiles(
        "bundled Qwen3 tokenizer", resource("tokenizer.json"), resource("tokenizer_config.json"), "", GenerationConfig.NONE,
        java.util.List.of());
  }

  /**
   * Reads the tokenizer files and the generation config of a Hugging Face model directory.
   *
   * @throws IllegalArgumentException naming the missing directory or file
   * @throws dev.tandem.engine.model.ModelFormatException naming the generation config's bad field
   */
  public static ModelFiles fromDirectory(Path dir) {
    if (!Files.isDirectory(dir)) {
      throw new IllegalArgumentException("model directory " + dir + " does not exist");
    }
    return new ModelFiles(
        dir.toString(), read(dir.resolve("tokenizer.json")), read(dir.resolve("tokenizer_config.json")),
        Files.isRegularFile(dir.resolve("chat_template.jinja"))
            ? new String(read(dir.resolve("chat_template.jinja")), java.nio.charset.StandardCharsets.UTF_8)
            : "",
        GenerationConfigFile.read(dir),
        labels(dir.resolve("config.json")));
  }

  /**
   * A sequence classifier's class names ({@code id2label} of a {@code *ForSequenceClassification}'s
   * config.json, by id); empty for another model, a directory without config.json, or none named.
   *
   * @throws dev.tandem.engine.model.ModelFormatException naming the file where it is not JSON or an id is not a number
   */
  static java.util.List<String> labels(Path config) {
    com.fasterxml.jackson.databind.JsonNode root = dev.tandem.engine.model.PoolingConfig.json(config);
    if (root == null || !root.path("architectures").path(0).asText("").endsWith(dev.tandem.engine.model.ModelConfig.SEQUENCE_CLASSIFICATION)) {
      return java.util.List.of();
    }
    java.util.TreeMap<Integer, String> byId = new java.util.TreeMap<>();
    for (var e : root.path("id2label").properties()) {
      try {
        byId.put(Integer.parseInt(e.getKey()), e.getValue().asText());
      } catch (NumberFormatException bad) {
        throw new dev.tandem.engine.model.ModelFormatException(config + ": field 'id2label' has key '" + e.getKey() + "', not a class id");
      }
    }
    java.util.List<String> labels = new java.util.ArrayList<>();
    for (int id = 0; byId.containsKey(id); id++) {
      labels.add(byId.get(id));
    }
    return labels;
  }

  private static byte[] read(Path file) {
    try {
      return Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("model file " + file + " is missing", e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read model file " + file, e);
    }
  }

  private static byte[] resource(String name) {
    try (InputStream in = ModelFiles.class.getResourceAsStream(BUNDLED + name)) {
      if (in == null) {
        throw new IllegalStateException("bundled tokenizer file " + name + " is missing from the jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
