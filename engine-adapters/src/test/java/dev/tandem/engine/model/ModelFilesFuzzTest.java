package dev.tandem.engine.model;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.grammar.GrammarException;
import dev.tandem.engine.grammar.GrammarState;
import dev.tandem.engine.grammar.JsonSchemaGrammar;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fuzz targets for the files a user hands the engine (a safetensors file, config.json) and the
 * JSON schemas clients send for structured outputs: every input loads, or is refused with a {@link
 * ModelFormatException} naming the file (a {@link GrammarException} naming the schema's place);
 * anything else is a finding. Committed inputs run with every test run; {@code .ci/fuzz} fuzzes
 * each target for a bounded time.
 */
class ModelFilesFuzzTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path DIR;

  static {
    try {
      DIR = Files.createTempDirectory("tandem-fuzz-model");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    DIR.toFile().deleteOnExit();
  }

  @FuzzTest(maxDuration = "30s")
  void safetensorsFile(byte[] bytes) throws IOException {
    Path file = DIR.resolve("model.safetensors");
    Files.write(file, bytes);
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      for (Tensor t : f.tensors().values()) {
        assertTrue(t.data().byteSize() >= 0);
      }
    } catch (ModelFormatException e) {
      assertTrue(e.getMessage().startsWith(file.toString()), "names the file: " + e.getMessage());
    }
  }

  /** generation_config.json: read, with defaults a request could have set itself; or refused naming the file. */
  @FuzzTest(maxDuration = "30s")
  void generationConfigJson(byte[] bytes) {
    dev.tandem.common.GenerationConfig g;
    try {
      g = GenerationConfigFile.parse(bytes, "generation_config.json");
    } catch (ModelFormatException e) {
      assertTrue(e.getMessage().startsWith("generation_config.json: "), "names the file: " + e.getMessage());
      return;
    }
    var d = g.samplingDefaults(java.util.List.of("temperature", "top_p", "top_k", "min_p", "repetition_penalty"));
    assertTrue(d.temperature() >= 0 && d.temperature() <= 2, "temperature " + d.temperature());
    assertTrue(d.topP() > 0 && d.topP() <= 1, "top_p " + d.topP());
    assertTrue(d.topK() == -1 || d.topK() >= 1, "top_k " + d.topK());
    assertTrue(d.minP() >= 0 && d.minP() <= 1, "min_p " + d.minP());
    assertTrue(d.repetitionPenalty() > 0 && d.repetitionPenalty() <= 2, "repetition_penalty " + d.repetitionPenalty());
    for (int id : g.eosTokenIds()) {
      assertTrue(id >= 0, "eos " + id);
    }
  }

  @FuzzTest(maxDuration = "30s")
  void configJson(byte[] bytes) {
    JsonNode root;
    try {
      root = JSON.readTree(bytes);
    } catch (IOException e) {
      return; // ModelConfig.read refuses text that is not JSON before parsing it
    }
    if (root == null) {
      return;
    }
    try {
      ModelConfig.parse("config.json", root);
    } catch (ModelFormatException e) {
      assertTrue(e.getMessage().startsWith("config.json: "), "names the file: " + e.getMessage());
    }
  }

  /** A schema compiles or is refused; a compiled one's matcher takes any bytes without failing. */
  @FuzzTest(maxDuration = "30s")
  void jsonSchema(FuzzedDataProvider data) {
    String schema = data.consumeString(400);
    GrammarState state;
    try {
      state = JsonSchemaGrammar.compile("", schema, "").newState();
    } catch (GrammarException e) {
      assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), "says why");
      return;
    }
    byte[] output = data.consumeRemainingAsBytes();
    for (int i = 0; i < output.length && state.advance(new byte[] {output[i]}); i++) {
      state.accepting();
    }
  }
}
