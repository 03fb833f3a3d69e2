package dev.tandem.engine.builtin;

import static dev.tandem.engine.builtin.ReferenceLogitsTest.assertClose;
import static dev.tandem.engine.builtin.ReferenceLogitsTest.blocks;
import static dev.tandem.engine.builtin.ReferenceLogitsTest.relativeError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ScalarBackend;
import dev.tandem.engine.compute.VectorBackend;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.engine.modeltools.LoraGenerator;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * LoRA adapters against PyTorch (src/test/python/reference_logits.py with {@code LORA}, which
 * merges {@code W + scaling·B·A} into the weights; the engine adds {@code B·(A·x)} to {@code W·x}
 * at run time): Llama with every projection adapted (rank 8, f32), Phi-3's fused qkv and gate_up
 * projections (rank 4, bf16 model and adapter), Qwen3 with rsLoRA's scaling (rank 16), and Llama
 * on a base quantized to Q4_0 at load (the reference merges the adapter into the rounded weights,
 * so the engine's quantized W·x plus B·(A·x) is checked). Each case
 * regenerates the model and the adapter and proves their hashes, then compares the logits after
 * the prompt and 20 greedy steps: alone, and batched beside a base-model sequence, whose logits
 * must be those it gets alone — an adapter changes only its own rows. The adapter must matter: its
 * logits differ from the base model's by far more than the tolerance.
 */
class LoraReferenceTest {
  private static final int BLOCK = 8;

  static Stream<Arguments> fixtures() {
    List<Arguments> all = new ArrayList<>();
    for (String name : List.of("llama-lora-f32", "phi3-lora-bf16", "qwen3-lora-rslora-f32", "llama-q4_0-lora-f32")) {
      for (String backend : List.of("cpu", "scalar")) {
        all.add(Arguments.of(name, backend));
      }
    }
    return all.stream();
  }

  @ParameterizedTest(name = "{0} on {1}")
  @MethodSource("fixtures")
  void matchesPyTorchWithTheAdapterMerged(String name, String backendName, @TempDir Path dir) throws Exception {
    JsonNode fixture;
    try (InputStream in = getClass().getResourceAsStream("/dev/tandem/engine/reference/" + name + ".json")) {
      fixture = new ObjectMapper().readTree(in);
    }
    DType dtype = fixture.get("dtype").asText().equals("bf16") ? DType.BF16 : DType.F32;
    double tolerance = dtype == DType.F32 ? 1e-4 : 1e-2;
    Path model = dir.resolve("model");
    ModelGenerator.write((ObjectNode) fixture.get("config"), dtype, fixture.get("seed").asLong(), model, 0);
    assertEquals(fixture.get("sha256").asText(), sha256(model.resolve("model.safetensors")), "the generator wrote different weights");
    JsonNode spec = fixture.get("lora");
    Path adapterDir = dir.resolve("adapter");
    LoraGenerator.write(model, adapterDir, spec.get("rank").asInt(), spec.get("alpha").asDouble(), spec.get("rslora").asBoolean(),
        LoraGenerator.ALL_TARGETS, spec.get("seed").asLong(), spec.get("dtype").asText().equals("bf16") ? DType.BF16 : DType.F32);
    assertEquals(spec.get("sha256").asText(), sha256(adapterDir.resolve("adapter_model.safetensors")), "the generator wrote a different adapter");

    ReferenceLogitsTest.Case a = ReferenceLogitsTest.Case.of(fixture.get("cases").get(0));
    ReferenceLogitsTest.Case b = ReferenceLogitsTest.Case.of(fixture.get("cases").get(1));
    ModelConfig config = ModelConfig.read(model);
    LoraAdapter adapter = LoraAdapter.load(new LoraAdapter.Source("x", adapterDir), config, 16);
    assertEquals(spec.get("rank").asInt(), adapter.rank());
    assertEquals(7 * config.numLayers(), adapter.deltaCount(), "every projection of every layer (fused ones split)");
    // An adapter on a base quantized at load: the reference merges it into the rounded weights.
    try (ModelWeights weights = ModelWeights.load(model, config, ReferenceLogitsTest.quantization(fixture));
        ComputeBackend backend = backendName.equals("cpu") ? new VectorBackend(2) : new ScalarBackend();
        PagedKvCache cache = new PagedKvCache(config, 64, BLOCK, DType.F32)) {
      Transformer t = new Transformer(weights, backend, BLOCK);

      // Alone, with the adapter: the prompt, then the reference's greedy tokens one at a time.
      int[] tableA = blocks(0, 6);
      float[] logits = t.forward(List.of(slice(a, 0, a.prompt().length, tableA, adapter)), cache)[0];
      assertClose(a.logits().get(0), logits, tolerance, name + " prefill");
      for (int step = 0; step < a.generated().length; step++) {
        int pos = a.prompt().length + step;
        float[] out = t.forward(List.of(slice(a, pos, 1, tableA, adapter)), cache)[0];
        assertClose(a.logits().get(step + 1), out, tolerance, name + " step " + (step + 1));
      }

      // The base model alone on B (for the batched run below), and the adapter's effect on A.
      int[] tableBase = blocks(6, 6);
      float[] base = t.forward(List.of(slice(b, 0, b.prompt().length, tableBase, null)), cache)[0];
      int[] tableAOnBase = blocks(12, 6);
      float[] aOnBase = t.forward(List.of(slice(a, 0, a.prompt().length, tableAOnBase, null)), cache)[0];
      assertTrue(relativeError(a.logits().get(0), aOnBase) > 100 * tolerance, "the adapter changes the logits");

      // Batched: B on the base model in the same pass as A with the adapter (in both orders).
      float[][] both = t.forward(
          List.of(slice(a, 0, a.prompt().length, blocks(18, 6), adapter), slice(b, 0, b.prompt().length, blocks(24, 6), null)), cache);
      assertClose(a.logits().get(0), both[0], tolerance, name + " batched, adapter");
      assertClose(base, both[1], 1e-5, name + " batched, base model beside an adapter");
      float[][] swapped = t.forward(
          List.of(slice(b, 0, b.prompt().length, blocks(30, 6), null), slice(a, 0, a.prompt().length, blocks(36, 6), adapter)), cache);
      assertClose(base, swapped[0], 1e-5, name + " batched first, base model");
      assertClose(a.logits().get(0), swapped[1], tolerance, name + " batched second, adapter");
    }
  }

  private static Transformer.Slice slice(ReferenceLogitsTest.Case c, int from, int n, int[] table, LoraAdapter lora) {
    return new Transformer.Slice(c.allTokens(), from, n, from, table, true, 0, lora);
  }

  private static String sha256(Path file) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
  }
}
