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

  /**
   * vLLM's {@code --hf-overrides} (a flag value, often set through the chart's {@code
   * model.hfOverrides}), against a small tokenizer.json: a two-way cross-encoder whose tokens are
   * in the vocabulary, or an {@link IllegalArgumentException} naming the flag.
   */
  @FuzzTest(maxDuration = "30s")
  void hfOverrides(byte[] bytes) throws IOException {
    Path dir = DIR.resolve("classifier");
    if (!Files.isRegularFile(dir.resolve("tokenizer.json"))) {
      Files.createDirectories(dir);
      Files.writeString(dir.resolve("tokenizer.json"), "{\"added_tokens\": [{\"id\": 2, \"content\": \"<x>\"}], "
          + "\"model\": {\"vocab\": {\"no\": 0, \"yes\": 1}}}");
    }
    try {
      ClassifierConfig c = ClassifierConfig.parse(new String(bytes, java.nio.charset.StandardCharsets.UTF_8), dir);
      assertTrue(c == null || (c.falseToken() >= 0 && c.falseToken() <= 2 && c.trueToken() >= 0 && c.trueToken() <= 2), String.valueOf(c));
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage().startsWith("--hf-overrides: "), "names the flag: " + e.getMessage());
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
    try { // an encoder's (BERT's) reading of the same file
      dev.tandem.engine.encoder.EncoderConfig c = dev.tandem.engine.encoder.EncoderConfig.parse("config.json", root);
      assertTrue(c.maxTokens() > 0 && c.hidden() % c.heads() == 0 && c.typeVocabSize() > 0 && c.layerNormEps() > 0, c.toString());
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

  /**
   * A text constraint of vLLM's {@code structured_outputs} — the first byte picks a regular
   * expression, a choice (a JSON array), an EBNF grammar or a structural tag (a JSON object), and
   * whether a reasoning comes before it; its text runs to the first 0 byte — compiles or is
   * refused saying why; a compiled one's matcher takes the remaining bytes one by
   * one without failing, keeps its states within the bound, and from wherever it stands still
   * names a finite way to a valid end.
   */
  @FuzzTest(maxDuration = "30s")
  void textGrammar(byte[] bytes) {
    if (bytes.length == 0) {
      return;
    }
    int end = 1;
    while (end < bytes.length && bytes[end] != 0) {
      end++;
    }
    String text = new String(bytes, 1, end - 1, java.nio.charset.StandardCharsets.UTF_8);
    dev.tandem.common.StructuredOutput c = switch (Math.floorMod(bytes[0], 4)) {
      case 0 -> dev.tandem.common.StructuredOutput.regex(text);
      case 1 -> dev.tandem.common.StructuredOutput.choice(text);
      case 2 -> dev.tandem.common.StructuredOutput.grammar(text);
      default -> dev.tandem.common.StructuredOutput.structuralTag(text);
    };
    c = switch ((bytes[0] >> 2) & 3) { // after a reasoning: optional, from the first byte, or with a self-overlapping tag
      case 1 -> c.withReasoning(new dev.tandem.common.StructuredOutput.Reasoning("<think>", "</think>", false));
      case 2 -> c.withReasoning(new dev.tandem.common.StructuredOutput.Reasoning("<think>", "</think>", true));
      case 3 -> c.withReasoning(new dev.tandem.common.StructuredOutput.Reasoning("", "aba", true));
      default -> c;
    };
    GrammarState state;
    try {
      state = dev.tandem.engine.grammar.OutputGrammars.compile(c).newState();
    } catch (GrammarException e) {
      assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), "says why");
      return;
    }
    for (int i = end + 1; i < bytes.length && state.advance(new byte[] {bytes[i]}); i++) {
      state.accepting();
      assertTrue(state.remainingBytes() < (1 << 24), "a way to the end remains");
    }
  }

  /** A model's config.json (the tiny shape) and a valid adapter for it: the base a LoRA input changes. */
  private static final ModelConfig LORA_MODEL;
  private static final byte[] LORA_WEIGHTS;

  static {
    try {
      Path model = Files.createDirectories(DIR.resolve("lora-model"));
      JSON.writeValue(model.resolve("config.json").toFile(), dev.tandem.engine.modeltools.ModelGenerator.shape("tiny"));
      LORA_MODEL = ModelConfig.read(model);
      Path valid = DIR.resolve("lora-valid");
      dev.tandem.engine.modeltools.LoraGenerator.write(model, valid, 4, 8, false, java.util.List.of("q_proj", "v_proj", "down_proj"), 1, DType.BF16);
      LORA_WEIGHTS = Files.readAllBytes(valid.resolve("adapter_model.safetensors"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A LoRA adapter's directory ({@code --lora-modules}): adapter_config.json (the bytes up to the
   * first 0 byte) and adapter_model.safetensors (the rest, or a valid one for this model when there
   * is none). It loads, with a rank within the limit and a finite scaling, or is refused with a
   * {@link ModelFormatException} naming one of the two files.
   */
  @FuzzTest(maxDuration = "30s")
  void loraAdapter(byte[] bytes) throws IOException {
    int split = 0;
    while (split < bytes.length && bytes[split] != 0) {
      split++;
    }
    Path adapter = Files.createDirectories(DIR.resolve("lora"));
    Files.write(adapter.resolve("adapter_config.json"), java.util.Arrays.copyOf(bytes, split));
    Files.write(adapter.resolve("adapter_model.safetensors"),
        split + 1 < bytes.length ? java.util.Arrays.copyOfRange(bytes, split + 1, bytes.length) : LORA_WEIGHTS);
    LoraAdapter loaded;
    try {
      loaded = LoraAdapter.load(new LoraAdapter.Source("fuzz", adapter), LORA_MODEL, 16);
    } catch (ModelFormatException e) {
      assertTrue(e.getMessage().startsWith(adapter.resolve("adapter_config.json").toString())
          || e.getMessage().startsWith(adapter.resolve("adapter_model.safetensors").toString()), "names the file: " + e.getMessage());
      return;
    }
    assertTrue(loaded.rank() >= 1 && loaded.rank() <= 16, "rank " + loaded.rank());
    assertTrue(Double.isFinite(loaded.scaling()), "scaling " + loaded.scaling());
    assertTrue(loaded.deltaCount() > 0);
  }
}
