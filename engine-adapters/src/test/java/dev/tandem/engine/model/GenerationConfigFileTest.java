package dev.tandem.engine.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.tandem.common.GenerationConfig;
import dev.tandem.common.SamplingParams;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GenerationConfigFileTest {
  /** Qwen3-0.6B's generation_config.json as Hugging Face publishes it. */
  private static final String QWEN3 = """
      {"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643], "pad_token_id": 151643,
       "temperature": 0.6, "top_k": 20, "top_p": 0.95, "transformers_version": "4.51.0"}""";
  private static final List<String> BUILTIN = List.of("temperature", "top_p", "top_k", "min_p", "repetition_penalty");

  @TempDir Path dir;

  private static GenerationConfig parse(String json) {
    return GenerationConfigFile.parse(json.getBytes(StandardCharsets.UTF_8), "m/generation_config.json");
  }

  @Test
  void qwen3sRecommendedSamplingBecomesTheDefaultWhereTheEngineHonoursIt() {
    GenerationConfig g = parse(QWEN3);
    assertArrayEquals(new int[] {151645, 151643}, g.eosTokenIds());
    SamplingParams d = g.samplingDefaults(BUILTIN);
    assertEquals(0.6f, d.temperature());
    assertEquals(0.95f, d.topP());
    assertEquals(20, d.topK());
    assertEquals(SamplingParams.DEFAULTS.minP(), d.minP(), "not in the file: OpenAI's default");
    assertEquals(SamplingParams.DEFAULTS.repetitionPenalty(), d.repetitionPenalty());
    // An engine without top_p and top_k (the mocker) keeps their plain defaults: a request that set
    // neither must not be refused for them.
    SamplingParams partial = g.samplingDefaults(List.of("temperature"));
    assertEquals(0.6f, partial.temperature());
    assertEquals(SamplingParams.NO_TOP_P, partial.topP());
    assertEquals(SamplingParams.NO_TOP_K, partial.topK());
  }

  @Test
  void aDirectoryWithoutTheFileHasNoneAndTopKOfZeroIsOff() throws Exception {
    assertSame(GenerationConfig.NONE, GenerationConfigFile.read(dir));
    assertEquals(SamplingParams.DEFAULTS, GenerationConfig.NONE.samplingDefaults(BUILTIN));
    assertEquals(SamplingParams.NO_TOP_K, parse("{\"top_k\": 0}").samplingDefaults(BUILTIN).topK());
    assertEquals(OptionalDouble.empty(), parse("{\"temperature\": null}").temperature());
  }

  @Test
  void aBadFieldIsRefusedNamingTheFileAndField() {
    String[][] cases = {
      {"{\"temperature\": \"hot\"}", "field 'temperature' must be a number from 0.0 to 2.0, was \"hot\""},
      {"{\"temperature\": 3}", "field 'temperature' must be a number from 0.0 to 2.0, was 3"},
      {"{\"top_p\": 0}", "field 'top_p' must be a number above 0.0 to 1.0, was 0"},
      {"{\"top_p\": 1e-50}", "field 'top_p' must be a number above 0.0 to 1.0, was 1.0E-50"},
      {"{\"top_k\": 2.5}", "field 'top_k' must be a positive integer, or 0 or -1 for none, was 2.5"},
      {"{\"repetition_penalty\": -1}", "field 'repetition_penalty' must be a number above 0.0 to 2.0, was -1"},
      {"{\"eos_token_id\": \"</s>\"}", "field 'eos_token_id' must be a token id or a list of them, has \"</s>\""},
      {"{\"eos_token_id\": [2, -1]}", "field 'eos_token_id' must be a token id or a list of them, has -1"},
      {"[1, 2]", "not a JSON object"},
      {"{\"temperature\": 0.6", "not valid JSON"},
    };
    for (String[] c : cases) {
      var e = assertThrows(ModelFormatException.class, () -> parse(c[0]), c[0]);
      assertEquals(true, e.getMessage().startsWith("m/generation_config.json: ") && e.getMessage().contains(c[1]), e.getMessage());
    }
  }

  @Test
  void itsEndOfSequenceTokensJoinConfigJsons() throws Exception {
    Path model = dir.resolve("tiny");
    ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 0, model, 0);
    int[] fromConfig = ModelConfig.read(model).eosTokenIds();
    Files.writeString(model.resolve(GenerationConfigFile.NAME), "{\"eos_token_id\": [" + fromConfig[0] + ", 7, 7]}");
    assertArrayEquals(new int[] {fromConfig[0], 7}, ModelConfig.read(model).eosTokenIds(), "config.json's first, each once");
    Files.writeString(model.resolve(GenerationConfigFile.NAME), "{\"top_p\": 7}");
    var e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(model));
    assertEquals(true, e.getMessage().contains(GenerationConfigFile.NAME + ": field 'top_p'"), e.getMessage());
  }
}
