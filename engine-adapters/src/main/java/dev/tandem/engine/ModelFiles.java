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
 * generation config.
 */
public record ModelFiles(
    String source, byte[] tokenizerJson, byte[] tokenizerConfigJson, String chatTemplateJinja, GenerationConfig generation) {
  private static final String BUNDLED = "/dev/tandem/engine/models/qwen3-tokenizer/";

  /** The real Qwen3 tokenizer shipped inside this jar. */
  public static ModelFiles bundledQwen3() {
    return new ModelFiles(
        "bundled Qwen3 tokenizer", resource("tokenizer.json"), resource("tokenizer_config.json"), "", GenerationConfig.NONE);
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
        GenerationConfigFile.read(dir));
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
