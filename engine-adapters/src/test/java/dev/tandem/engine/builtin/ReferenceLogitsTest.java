package dev.tandem.engine.builtin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.ScalarBackend;
import dev.tandem.engine.compute.VectorBackend;
import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.cuda.TestGpus;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.engine.model.ModelWeights;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The engine's logits against an independent PyTorch implementation (src/test/python/
 * reference_logits.py): for Llama (with Llama-3 RoPE scaling), Mistral (with a sliding window), Phi-3
 * (fused qkv and gate/up projections; LongRoPE's long factors with Phi-4-mini's partial rotation, and
 * its short ones in a context within the original: the fixture's {@code context}), Gemma 3
 * (sliding and full layers with their own RoPE bases, GeGLU, its extra norms, a logit cap), Qwen2
 * (qkv bias) and Qwen3 (q/k norm, tied embeddings) in f32, bf16 and f16 — Llama (f32) and Qwen3
 * (bf16) also with their weights quantized to Q8_0 and to Q4_0 at load, the reference rounding them as
 * ggml does (under Q8_0 Llama's down projection, 96 columns, stays as stored; under Q4_0 its 192
 * columns fall back to Q8_0, and the embedding and LM head are Q8_0) — after the prompt and after
 * each of 20 greedy decode steps; alone, chunked, and batched with a second prompt that reuses the first one's cached prefix
 * blocks; on the scalar, cpu and cuda backends (cuda skipped, with the reason, where no CUDA device
 * initialises); {@link EmulatedReferenceLogitsTest} runs cuda's device forward pass on the emulated
 * GPU. The fixture holds the weights' hash: the test regenerates the same model and proves it.
 *
 * <p>The reference keeps K and V in f32; the engine runs each fixture with an f32 KV cache (max
 * logit error relative to the largest logit below 1e-4 for f32 weights, 1e-2 for 16-bit ones) and
 * with bf16 and f16 caches, whose rounding of every stored key and value (relative error up to
 * 2^-9 for bf16, 2^-12 for f16) these small random models amplify: 4e-2 for a bf16 cache, 1e-2 for
 * f16 (measured at most 2.6e-2 and 2.8e-3 over every fixture and step; the greedy tokens still
 * agree wherever the reference's top two logits are apart).
 */
class ReferenceLogitsTest {
  private static final int BLOCK = 8;

  /** The cases (fixture, backend, KV dtype); a subclass's own {@code fixtures()} replaces them. */
  static Stream<Arguments> fixtures() {
    List<Arguments> all = new ArrayList<>();
    for (String name : List.of("llama-f32", "llama-bf16", "mistral-f32", "mistral-bf16", "mistral-window-f32", "mistral-window-bf16", "phi3-f32", "phi3-window-bf16", "qwen2-f32", "qwen2-window-f32", "qwen3-f32", "qwen3-bf16", "qwen3-f16", "gemma3-f32", "gemma3-bf16", "gemma3-layer-types-f32", "gemma2-f32", "gemma2-bf16", "phi4-longrope-f32", "phi4-longrope-bf16", "phi3-longrope-short-f32", "llama-q8_0-f32", "qwen3-q8_0-bf16", "llama-q4_0-f32", "qwen3-q4_0-bf16")) {
      for (String backend : List.of("cpu", "scalar", "cuda")) {
        if ((name.contains("-window") || name.startsWith("gemma") || name.contains("longrope") || name.contains("q8_0") || name.contains("q4_0")) && backend.equals("cuda")) {
          continue; // a GPU serves a windowed model only within its window, and no Gemma, LongRoPE or quantized weights (CudaEngineTest)
        }
        for (DType kv : List.of(DType.F32, DType.BF16, DType.F16)) {
          all.add(Arguments.of(name, backend, kv));
        }
      }
    }
    return all.stream();
  }

  private static ComputeBackend backend(String name) {
    return switch (name) {
      case "cpu" -> new VectorBackend(2);
      case "cuda" -> new CudaBackend(TestGpus.device());
      case "cuda-emulated" -> new CudaBackend(TestGpus.emulated());
      default -> new ScalarBackend();
    };
  }

  /** Each fixture and its model, read and generated (the hash proved) once for all its backends and KV dtypes. */
  private static final Map<String, Fixture> FIXTURES = new HashMap<>();
  @TempDir static Path models;

  private record Fixture(JsonNode json, DType dtype, Path dir) {}

  @BeforeAll
  static void forgetFixtures() {
    FIXTURES.clear(); // a subclass runs with a fresh models directory
  }

  @ParameterizedTest(name = "{0} on {1}, KV {2}")
  @MethodSource("fixtures")
  void matchesPyTorch(String name, String backendName, DType kvDtype) throws Exception {
    Fixture f = FIXTURES.get(name);
    if (f == null) {
      f = fixture(name);
      FIXTURES.put(name, f);
    }
    JsonNode fixture = f.json();
    DType dtype = f.dtype();
    Path dir = f.dir();
    double tolerance = switch (kvDtype) {
      case F32 -> dtype == DType.F32 ? 1e-4 : 1e-2;
      case BF16 -> 4e-2;
      case F16 -> 1e-2;
      case Q8_0, Q4_0 -> throw new IllegalArgumentException("not a KV type");
    };
    Case a = Case.of(fixture.get("cases").get(0));
    Case b = Case.of(fixture.get("cases").get(1));
    ModelConfig config = ModelConfig.read(dir);
    try (ModelWeights weights = ModelWeights.load(dir, config, quantization(fixture));
        ComputeBackend backend = backend(backendName);
        PagedKvCache cache = new PagedKvCache(config, 64, BLOCK, kvDtype);
        // On cuda the engine's forward pass: activations and KV on the device, written through to the host cache.
        ForwardPass model = backend instanceof CudaBackend cuda
            ? new CudaTransformer(weights, cuda, cache)
            : new Transformer(weights, backend, BLOCK, fixture.path("context").asInt(config.maxPositionEmbeddings()))) {

      // Alone: the whole prompt in one pass, then 20 decode steps.
      int[] tableA = blocks(0, 6);
      float[] logits = model.forward(List.of(prefill(a, 0, a.prompt.length, tableA)), cache)[0];
      assertClose(a.logits.get(0), logits, tolerance, name + " prefill");
      assertEmbedding(model, 0, a, tolerance, name + " prefill");
      decode(model, cache, List.of(a), List.of(tableA), tolerance, name + " alone");

      // Chunked: the prompt in chunks of 5 tokens into fresh blocks gives the same logits.
      int[] tableChunked = blocks(6, 6);
      float[] last = null;
      for (int from = 0; from < a.prompt.length; from += 5) {
        int n = Math.min(5, a.prompt.length - from);
        last = model.forward(List.of(prefill(a, from, n, tableChunked)), cache)[0];
      }
      assertClose(a.logits.get(0), last, tolerance, name + " chunked prefill");

      // Batched with prefix reuse: B's first 16 tokens are A's, so B starts at position 16 on
      // A's first two blocks, in the same passes as A.
      int[] tableA2 = blocks(12, 6);
      int[] tableB = {tableA2[0], tableA2[1], 30, 31, 32, 33};
      float[][] both =
          model.forward(
              List.of(prefill(a, 0, a.prompt.length, tableA2), prefill(b, 16, b.prompt.length - 16, tableB)),
              cache);
      assertClose(a.logits.get(0), both[0], tolerance, name + " batched A");
      assertClose(b.logits.get(0), both[1], tolerance, name + " batched B on A's prefix");
      assertEmbedding(model, 1, b, tolerance, name + " batched B on A's prefix");
      decode(model, cache, List.of(a, b), List.of(tableA2, tableB), tolerance, name + " batched");
    }
  }

  /**
   * The final norm's output for the prompt's last token (an embedding) is the reference's, where
   * the fixture records it.
   */
  private static void assertEmbedding(ForwardPass model, int slice, Case c, double tolerance, String what) {
    if (c.hidden != null) {
      assertClose(c.hidden, model.finalHidden(slice), tolerance, what + " embedding");
    }
  }

  private Fixture fixture(String name) throws Exception {
    JsonNode fixture;
    try (InputStream in = getClass().getResourceAsStream("/dev/tandem/engine/reference/" + name + ".json")) {
      fixture = new ObjectMapper().readTree(in);
    }
    DType dtype = switch (fixture.get("dtype").asText()) {
      case "f32" -> DType.F32;
      case "bf16" -> DType.BF16;
      default -> DType.F16;
    };
    Path dir = models.resolve(name);
    ModelGenerator.write((ObjectNode) fixture.get("config"), dtype, fixture.get("seed").asLong(), dir, 0);
    String sha = HexFormat.of().formatHex(
        MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(dir.resolve("model.safetensors"))));
    assertEquals(fixture.get("sha256").asText(), sha, "the generator wrote different weights than the fixture's");
    return new Fixture(fixture, dtype, dir);
  }

  private static Transformer.Slice prefill(Case c, int from, int n, int[] table) {
    int[] all = c.allTokens();
    return new Transformer.Slice(all, from, n, from, table, true);
  }

  /** Feeds the reference's greedy tokens one step at a time to every case at once. */
  private static void decode(
      ForwardPass model, PagedKvCache cache, List<Case> cases, List<int[]> tables, double tol, String what) {
    for (int step = 0; step < cases.get(0).generated.length; step++) {
      List<Transformer.Slice> slices = new ArrayList<>();
      for (int i = 0; i < cases.size(); i++) {
        Case c = cases.get(i);
        int pos = c.prompt.length + step;
        slices.add(new Transformer.Slice(c.allTokens(), pos, 1, pos, tables.get(i), true));
      }
      float[][] out = model.forward(slices, cache);
      for (int i = 0; i < cases.size(); i++) {
        Case c = cases.get(i);
        assertClose(c.logits.get(step + 1), out[i], tol, what + " step " + (step + 1));
        if (step + 1 < c.generated.length) {
          assertGreedyAgrees(c, step + 1, out[i], what);
        }
      }
    }
  }

  /** Where the reference's top two logits are clearly apart, the engine picks the same token. */
  private static void assertGreedyAgrees(Case c, int step, float[] logits, String what) {
    float[] ref = c.logits.get(step);
    int best = Sampler.argmax(ref);
    float second = Float.NEGATIVE_INFINITY;
    for (int i = 0; i < ref.length; i++) {
      if (i != best) {
        second = Math.max(second, ref[i]);
      }
    }
    if (ref[best] - second > 1e-3 * Math.abs(ref[best])) {
      assertEquals(c.generated[step], Sampler.argmax(logits), what + ": greedy token at step " + step);
    }
  }

  static void assertClose(float[] expected, float[] actual, double tolerance, String what) {
    assertEquals(expected.length, actual.length, what + ": vocabulary size");
    double rel = relativeError(expected, actual);
    assertTrue(rel < tolerance, what + ": relative error " + rel + " ≥ " + tolerance);
  }

  /** The largest difference relative to the largest expected magnitude. */
  static double relativeError(float[] expected, float[] actual) {
    double maxDiff = 0;
    double scale = 0;
    for (int i = 0; i < expected.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(expected[i] - actual[i]));
      scale = Math.max(scale, Math.abs(expected[i]));
    }
    return maxDiff / scale;
  }

  static int[] blocks(int first, int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = first + i;
    }
    return t;
  }

  /** The quantization the fixture's reference rounded its weights as (its {@code quantization}), or null. */
  static DType quantization(JsonNode fixture) {
    return fixture.has("quantization") ? DType.fromQuantizationName(fixture.get("quantization").asText()) : null;
  }

  /**
   * One prompt of a fixture: its tokens, the reference's greedy tokens, the logits after the prompt
   * and each of them, and the final norm's output after the prompt (null in older fixtures).
   */
  record Case(int[] prompt, int[] generated, List<float[]> logits, float[] hidden) {
    static Case of(JsonNode n) {
      List<float[]> logits = new ArrayList<>();
      for (JsonNode row : n.get("logits")) {
        logits.add(floats(row));
      }
      // the final norm's output after the prompt, in fixtures written since it was recorded
      float[] hidden = n.has("hidden") ? floats(n.get("hidden")) : null;
      return new Case(ints(n.get("prompt")), ints(n.get("generated")), logits, hidden);
    }

    private static float[] floats(JsonNode values) {
      float[] v = new float[values.size()];
      for (int i = 0; i < v.length; i++) {
        v[i] = (float) values.get(i).asDouble();
      }
      return v;
    }

    int[] allTokens() {
      int[] all = java.util.Arrays.copyOf(prompt, prompt.length + generated.length);
      System.arraycopy(generated, 0, all, prompt.length, generated.length);
      return all;
    }

    private static int[] ints(JsonNode n) {
      int[] out = new int[n.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = n.get(i).asInt();
      }
      return out;
    }
  }
}
