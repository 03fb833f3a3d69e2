package dev.tandem.engine.encoder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ScalarBackend;
import dev.tandem.engine.compute.VectorBackend;
import dev.tandem.engine.model.PoolingConfig;
import dev.tandem.engine.modeltools.EncoderGenerator;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.function.Supplier;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The encoder's pooled states against an independent PyTorch forward pass in float64
 * (src/test/python/reference_encoder.py, fixtures {@code reference/encoder-*.json}): a 2-layer
 * BERT of {@link EncoderGenerator} (seed 7) and an XLM-RoBERTa (seed 8: weights under {@code
 * roberta.}, positions from the padding id + 1), four inputs of 2 to 63 tokens, pooled by CLS,
 * mean, max and the last token, on the scalar and cpu (Vector API) backends. The fixture holds the
 * weights' hash: the test regenerates the same model and proves it. Largest error allowed: 1e-4
 * of the largest value (f32 against float64).
 */
class EncoderReferenceTest {
  @TempDir Path dir;

  @ParameterizedTest
  @CsvSource({"bert,7,scalar", "bert,7,cpu", "xlm-roberta,8,scalar", "xlm-roberta,8,cpu"})
  void pooledStatesMatchTheReference(String modelType, long seed, String backendName) throws Exception {
    JsonNode fixture;
    try (InputStream in = getClass().getResourceAsStream("/dev/tandem/engine/reference/encoder-" + modelType + ".json")) {
      fixture = new ObjectMapper().readTree(in);
    }
    EncoderGenerator.write(dir, seed, modelType, 32, 2, 4, 64, null);
    String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(dir.resolve("model.safetensors"))));
    assertEquals(fixture.path("weights_sha256").asText(), sha, "the fixture's model is the one generated here");
    Supplier<ComputeBackend> backend = () -> backendName.equals("scalar") ? new ScalarBackend() : new VectorBackend(2);
    try (EncoderModel model = EncoderModel.load(dir, EncoderConfig.read(dir), backend.get())) {
      for (JsonNode c : fixture.path("cases")) {
        int[] ids = new int[c.path("ids").size()];
        for (int i = 0; i < ids.length; i++) {
          ids[i] = c.path("ids").get(i).asInt();
        }
        for (PoolingConfig.Mode mode : PoolingConfig.Mode.values()) {
          JsonNode want = c.path(mode.name().toLowerCase(java.util.Locale.ROOT));
          float[] got = model.pooled(ids, mode);
          assertEquals(want.size(), got.length);
          double largest = 0;
          double error = 0;
          for (int i = 0; i < got.length; i++) {
            largest = Math.max(largest, Math.abs(want.get(i).asDouble()));
            error = Math.max(error, Math.abs(got[i] - want.get(i).asDouble()));
          }
          assertTrue(error <= 1e-4 * largest, mode + " of " + ids.length + " tokens: error " + error + " of " + largest);
        }
      }
    }
  }

  /** Past one run of the backend's attention (64 rows): 200 tokens, the cpu backend against the scalar one, every state. */
  @org.junit.jupiter.api.Test
  void longInputsAttendAlikeOnBothBackends() throws Exception {
    EncoderGenerator.write(dir, 9, "bert", 64, 2, 4, 128, 256, null);
    int[] ids = new int[200];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = 10 + (i * 31) % 90;
    }
    float[] scalar;
    float[] vector;
    try (EncoderModel model = EncoderModel.load(dir, EncoderConfig.read(dir), new ScalarBackend())) {
      scalar = model.forward(ids);
    }
    try (EncoderModel model = EncoderModel.load(dir, EncoderConfig.read(dir), new VectorBackend(2))) {
      vector = model.forward(ids);
    }
    double largest = 0;
    double error = 0;
    for (int i = 0; i < scalar.length; i++) {
      largest = Math.max(largest, Math.abs(scalar[i]));
      error = Math.max(error, Math.abs(scalar[i] - vector[i]));
    }
    assertTrue(error <= 1e-4 * largest, "error " + error + " of " + largest);
  }

  /** A batch of inputs of different lengths pools as each input alone: rows attend within their own input. */
  @ParameterizedTest
  @ValueSource(strings = {"scalar", "cpu"})
  void aBatchPoolsAsEachInputAlone(String backendName) throws Exception {
    EncoderGenerator.write(dir, 9, "bert", 64, 2, 4, 128, 256, null);
    int[][] inputs = new int[5][];
    for (int s = 0; s < inputs.length; s++) {
      inputs[s] = new int[new int[] {2, 130, 7, 64, 1}[s]];
      for (int i = 0; i < inputs[s].length; i++) {
        inputs[s][i] = 10 + (i * 31 + s * 7) % 90;
      }
    }
    try (EncoderModel model = EncoderModel.load(dir, EncoderConfig.read(dir),
        backendName.equals("scalar") ? new ScalarBackend() : new VectorBackend(2))) {
      for (PoolingConfig.Mode mode : PoolingConfig.Mode.values()) {
        float[][] together = model.pooled(inputs, mode);
        for (int s = 0; s < inputs.length; s++) {
          float[] alone = model.pooled(inputs[s], mode);
          for (int i = 0; i < alone.length; i++) {
            assertEquals(alone[i], together[s][i], 1e-4f * (1 + Math.abs(alone[i])), mode + ", input " + s + " of " + inputs[s].length);
          }
        }
      }
    }
  }
}
