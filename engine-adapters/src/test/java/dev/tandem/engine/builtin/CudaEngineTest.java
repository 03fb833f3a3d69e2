package dev.tandem.engine.builtin;

import static dev.tandem.engine.EngineRuns.runToCompletion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.cuda.Gpu;
import dev.tandem.engine.cuda.TestGpus;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The whole engine with {@code --compute cuda}, on GPU 0 and on the emulated GPU ({@code
 * tandem.cu}'s kernels compiled for the CPU): batching, chunked prefill, preemption, prefix reuse, moving the KV cache,
 * and KV handed between a cuda engine and a cpu engine in both directions (the write-through to the
 * host cache, and imported blocks reaching the device) all give the cpu engine's greedy tokens.
 * Each skipped, naming what is missing, where its GPU cannot run (no device; no g++ or CUDA's
 * headers). Tagged {@code emulation}: left out of the fast tier.
 */
@Tag("emulation")
class CudaEngineTest {
  @TempDir static Path dir;
  static Path model;

  @BeforeAll
  static void createModel() {
    model = TestModels.tinyQwen3(dir.resolve("tiny"), DType.BF16);
  }

  private static BuiltinEngine engine(String compute, int kvBlocks, int maxBatchedTokens) {
    long blockBytes = ModelConfig.read(model).kvBytesPerToken() * 16;
    BuiltinConfig c = BuiltinConfig.of(model).withCompute("cpu", 2).withKvCacheBytes(kvBlocks * blockBytes)
        .withBatching(16, maxBatchedTokens, true);
    if (compute.equals("cpu")) {
      return BuiltinEngine.open(c);
    }
    Gpu gpu = TestGpus.open(compute);
    ModelWeights weights = ModelWeights.load(model, ModelConfig.read(model));
    return new BuiltinEngine(weights, new CudaBackend(gpu), c);
  }

  private static int[] prompt(int length, int salt) {
    return IntStream.range(0, length).map(i -> (i * 31 + salt * 17 + 3) % 250).toArray();
  }

  private static EngineRequest greedy(String id, int[] prompt, int maxTokens) {
    return new EngineRequest(id, prompt, SamplingParams.greedy(), new StopConditions(maxTokens, new int[0], true));
  }

  private static List<Integer> alone(String compute, EngineRequest request) {
    try (BuiltinEngine e = engine(compute, 64, 512)) {
      e.add(request);
      return runToCompletion(e, new HashMap<>()).get(request.requestId());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"cuda", "emulated"})
  void batchedChunkedAndPreemptedStepsGiveTheCpuEnginesTokens(String gpu) {
    int[] p1 = prompt(37, 1);
    int[] p2 = prompt(21, 2);
    int[] p3 = prompt(50, 3);
    List<Integer> a1 = alone("cpu", greedy("a", p1, 12));
    List<Integer> a2 = alone("cpu", greedy("b", p2, 12));
    List<Integer> a3 = alone("cpu", greedy("c", p3, 12));
    assertEquals(a1, alone(gpu, greedy("a", p1, 12)), "alone");
    try (BuiltinEngine e = engine(gpu, 64, 16)) {
      assertEquals("builtin-cuda", e.info().engineName());
      e.add(greedy("a", p1, 12));
      e.add(greedy("b", p2, 12));
      e.add(greedy("c", p3, 12));
      Map<String, List<Integer>> out = runToCompletion(e, new HashMap<>());
      assertEquals(a1, out.get("a"));
      assertEquals(a2, out.get("b"));
      assertEquals(a3, out.get("c"));
      assertEquals(0, e.pool().usedBlocks(), "every block is back in the pool");
    }
    int[] q1 = prompt(30, 11);
    int[] q2 = prompt(31, 12);
    List<Integer> b1 = alone("cpu", greedy("x", q1, 12));
    List<Integer> b2 = alone("cpu", greedy("y", q2, 12));
    try (BuiltinEngine e = engine(gpu, 5, 512)) {
      e.add(greedy("x", q1, 12));
      e.add(greedy("y", q2, 12));
      Map<String, List<Integer>> out = runToCompletion(e, new HashMap<>());
      assertEquals(b1, out.get("x"));
      assertEquals(b2, out.get("y"));
      assertTrue(e.preemptions() > 0, "the small pool forced a preemption");
    }
  }

  /** Speculative decoding on the GPU: its verification passes (every position's logits) give the cpu engine's tokens. */
  @ParameterizedTest
  @ValueSource(strings = {"cuda", "emulated"})
  void speculationGivesTheCpuEnginesTokens(String gpu) {
    int[] repetitive = IntStream.range(0, 45).map(i -> (i % 9 * 31 + 20) % 250).toArray();
    List<Integer> expected = alone("cpu", greedy("s", repetitive, 40));
    Gpu device = TestGpus.open(gpu);
    ModelWeights weights = ModelWeights.load(model, ModelConfig.read(model));
    BuiltinConfig c = BuiltinConfig.of(model).withKvCacheBytes(8L << 20)
        .withSpeculative(new dev.tandem.engine.sched.SpeculativeConfig(4, 3, 1));
    try (BuiltinEngine e = new BuiltinEngine(weights, new CudaBackend(device), c)) {
      e.add(greedy("s", repetitive, 40));
      assertEquals(expected, runToCompletion(e, new HashMap<>()).get("s"));
      assertTrue(e.speculationCounts().accepted() > 0, "proposals kept: " + e.speculationCounts());
      assertEquals(0, e.pool().usedBlocks());
    }
  }

  /** A model whose heads the kernels cannot hold is refused at start-up, naming the limit, and frees what it took. */
  @org.junit.jupiter.api.Test
  void aModelTheKernelsCannotHoldIsRefusedAtStartUp(@TempDir Path wide) throws Exception {
    var shape = dev.tandem.engine.modeltools.ModelGenerator.config("Qwen3ForCausalLM", "qwen3", 64, 128, 1, 1, 1, 320, 256, true);
    shape.put("bos_token_id", 1).put("eos_token_id", 2);
    dev.tandem.engine.modeltools.ModelGenerator.write(shape, DType.BF16, 3, wide, 0);
    dev.tandem.engine.cuda.EmulatedGpu gpu = TestGpus.emulated();
    BuiltinConfig c = BuiltinConfig.of(wide).withKvCacheBytes(1 << 20);
    try (ModelWeights weights = ModelWeights.load(wide, ModelConfig.read(wide)); CudaBackend backend = new CudaBackend(gpu)) {
      var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> new BuiltinEngine(weights, backend, c));
      assertTrue(e.getMessage().contains("256") && e.getMessage().contains("320"), e.getMessage());
    }
    assertEquals(0, gpu.liveAllocations(), "no device memory left behind");
  }

  /** The kernels read f32, f16 and bf16 weights: quantized ones are refused at start-up, naming the CPU backend. */
  @org.junit.jupiter.api.Test
  void quantizedWeightsAreRefusedNamingTheCpuBackend(@TempDir Path dir) throws Exception {
    var shape = dev.tandem.engine.modeltools.ModelGenerator.config("Qwen3ForCausalLM", "qwen3", 64, 128, 1, 4, 2, 16, 256, true);
    dev.tandem.engine.modeltools.ModelGenerator.write(shape, DType.BF16, 3, dir, 0);
    for (DType type : List.of(DType.Q8_0, DType.Q4_0)) {
      dev.tandem.engine.cuda.EmulatedGpu gpu = TestGpus.emulated();
      try (ModelWeights weights = ModelWeights.load(dir, ModelConfig.read(dir), type); CudaBackend backend = new CudaBackend(gpu)) {
        var refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
            () -> new BuiltinEngine(weights, backend, BuiltinConfig.of(dir).withKvCacheBytes(1 << 20)));
        assertTrue(refused.getMessage().contains("--quantization " + type.shortName()) && refused.getMessage().contains("--compute cpu"),
            refused.getMessage());
      }
      assertEquals(0, gpu.liveAllocations(), "no device memory left behind");
    }
  }

  /** No kernel applies a LoRA adapter: adapters on a GPU worker are refused at start-up, naming the CPU backend. */
  @org.junit.jupiter.api.Test
  void loraAdaptersAreRefusedNamingTheCpuBackend(@TempDir Path dir) throws Exception {
    Path model = dir.resolve("model");
    var shape = dev.tandem.engine.modeltools.ModelGenerator.config("Qwen3ForCausalLM", "qwen3", 64, 128, 1, 4, 2, 16, 256, true);
    dev.tandem.engine.modeltools.ModelGenerator.write(shape, DType.BF16, 3, model, 0);
    dev.tandem.engine.modeltools.LoraGenerator.write(model, dir.resolve("sql"), 4, 8, false, List.of("q_proj"), 1, DType.F32);
    dev.tandem.engine.cuda.EmulatedGpu gpu = TestGpus.emulated();
    try (ModelWeights weights = ModelWeights.load(model, ModelConfig.read(model)); CudaBackend backend = new CudaBackend(gpu)) {
      var refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
          () -> new BuiltinEngine(weights, backend, BuiltinConfig.of(model).withKvCacheBytes(1 << 20)
              .withLora(List.of(new dev.tandem.engine.model.LoraAdapter.Source("sql", dir.resolve("sql"))), 16)));
      assertTrue(refused.getMessage().contains("--lora-modules") && refused.getMessage().contains("--compute cpu"), refused.getMessage());
    }
    assertEquals(0, gpu.liveAllocations(), "no device memory left behind");
  }

  /**
   * The kernels attend over every earlier position: a model with a sliding window is served on a
   * GPU only as far as its window reaches (where full attention is the same), and a longer
   * --max-context-length is refused, pointing at the CPU backend, which has the window.
   */
  @org.junit.jupiter.api.Test
  void aSlidingWindowCapsTheContextOnAGpu(@TempDir Path dir) throws Exception {
    var shape = dev.tandem.engine.modeltools.ModelGenerator.config("MistralForCausalLM", "mistral", 64, 128, 2, 4, 2, 16, 256, true);
    shape.put("bos_token_id", 1).put("eos_token_id", 2).put("sliding_window", 40);
    dev.tandem.engine.modeltools.ModelGenerator.write(shape, DType.BF16, 3, dir, 0);
    dev.tandem.engine.cuda.EmulatedGpu gpu = TestGpus.emulated();
    BuiltinConfig c = BuiltinConfig.of(dir).withKvCacheBytes(1 << 20);
    try (BuiltinEngine e = new BuiltinEngine(ModelWeights.load(dir, ModelConfig.read(dir)), new CudaBackend(gpu), c)) {
      assertEquals(40, e.info().maxContextLength());
    }
    try (ModelWeights weights = ModelWeights.load(dir, ModelConfig.read(dir)); CudaBackend backend = new CudaBackend(gpu)) {
      var refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
          () -> new BuiltinEngine(weights, backend, c.withMaxContextLength(41)));
      assertTrue(refused.getMessage().contains("sliding_window") && refused.getMessage().contains("40")
          && refused.getMessage().contains("--compute cpu"), refused.getMessage());
    }
  }

  /**
   * Gemma 3 and 2 (GeGLU, their extra norms, a RoPE base per layer type, capped scores) and GELU
   * gates have no kernels here: refused at start, naming the CPU backend.
   */
  @org.junit.jupiter.api.Test
  void modelsWithoutGpuKernelsAreRefusedNamingTheCpuBackend(@TempDir Path dir) throws Exception {
    var shape = dev.tandem.engine.modeltools.ModelGenerator.config("Gemma3ForCausalLM", "gemma3_text", 64, 128, 2, 4, 2, 16, 256, true);
    shape.put("sliding_window", 4096);
    dev.tandem.engine.modeltools.ModelGenerator.write(shape, DType.BF16, 3, dir, 0);
    try (ModelWeights weights = ModelWeights.load(dir, ModelConfig.read(dir)); CudaBackend backend = new CudaBackend(TestGpus.emulated())) {
      var refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
          () -> new BuiltinEngine(weights, backend, BuiltinConfig.of(dir).withKvCacheBytes(1 << 20)));
      assertTrue(refused.getMessage().contains("Gemma3ForCausalLM") && refused.getMessage().contains("--compute cpu"), refused.getMessage());
    }
    Path gemma2 = dir.resolve("gemma2");
    dev.tandem.engine.modeltools.ModelGenerator.write(dev.tandem.engine.modeltools.ModelGenerator.config(
        "Gemma2ForCausalLM", "gemma2", 64, 128, 2, 4, 2, 16, 256, true).put("query_pre_attn_scalar", 16).put("sliding_window", 4096), DType.BF16, 3, gemma2, 0);
    try (ModelWeights weights = ModelWeights.load(gemma2, ModelConfig.read(gemma2)); CudaBackend backend = new CudaBackend(TestGpus.emulated())) {
      var refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
          () -> new BuiltinEngine(weights, backend, BuiltinConfig.of(gemma2).withKvCacheBytes(1 << 20)));
      assertTrue(refused.getMessage().contains("Gemma2ForCausalLM") && refused.getMessage().contains("--compute cpu"), refused.getMessage());
    }
    // A Llama whose MLP gates with GELU (transformers runs any hidden_act): on the CPU only, too.
    var gelu = dev.tandem.engine.modeltools.ModelGenerator.config("LlamaForCausalLM", "llama", 64, 128, 2, 4, 2, 16, 256, true)
        .put("hidden_act", "gelu_pytorch_tanh");
    Path llama = dir.resolve("gelu-llama");
    dev.tandem.engine.modeltools.ModelGenerator.write(gelu, DType.BF16, 3, llama, 0);
    try (ModelWeights weights = ModelWeights.load(llama, ModelConfig.read(llama)); CudaBackend backend = new CudaBackend(TestGpus.emulated())) {
      var refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
          () -> new BuiltinEngine(weights, backend, BuiltinConfig.of(llama).withKvCacheBytes(1 << 20)));
      assertTrue(refused.getMessage().contains("gelu_pytorch_tanh") && refused.getMessage().contains("--compute cpu"), refused.getMessage());
    }
    // Phi-4-mini's RoPE (three quarters of each head rotated, LongRoPE): the GPU's rope kernel has neither.
    var phi4 = dev.tandem.engine.modeltools.ModelGenerator.config("Phi3ForCausalLM", "phi3", 64, 128, 2, 4, 2, 16, 256, true)
        .put("partial_rotary_factor", 0.75).put("original_max_position_embeddings", 16);
    var rope = phi4.putObject("rope_scaling").put("type", "longrope");
    for (int i = 0; i < 6; i++) {
      rope.withArray("short_factor").add(1.0);
      rope.withArray("long_factor").add(2.0);
    }
    Path phi = dir.resolve("phi4");
    dev.tandem.engine.modeltools.ModelGenerator.write(phi4, DType.BF16, 3, phi, 0);
    try (ModelWeights weights = ModelWeights.load(phi, ModelConfig.read(phi)); CudaBackend backend = new CudaBackend(TestGpus.emulated())) {
      var refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
          () -> new BuiltinEngine(weights, backend, BuiltinConfig.of(phi).withKvCacheBytes(1 << 20)));
      assertTrue(refused.getMessage().contains("partial_rotary_factor 12/16") && refused.getMessage().contains("longrope")
          && refused.getMessage().contains("--compute cpu"), refused.getMessage());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"cuda", "emulated"})
  void cachedPrefixesSurviveAMoveOfTheKvCache(String gpu) {
    int[] p = prompt(40, 5);
    List<Integer> expected = alone("cpu", greedy("e", p, 8));
    try (Arena elsewhere = Arena.ofShared(); BuiltinEngine e = engine(gpu, 64, 512)) {
      Map<String, RequestOutput> last = new HashMap<>();
      e.add(greedy("before", p, 8));
      assertEquals(expected, runToCompletion(e, last).get("before"));
      e.relocateKv(bytes -> elsewhere.allocate(bytes, 4096));
      e.add(greedy("after", p, 8));
      assertEquals(expected, runToCompletion(e, last).get("after"));
      assertEquals(32, last.get("after").cachedTokens(), "the cached prefix came along");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"cuda", "emulated"})
  void kvMovesBetweenACudaAndACpuEngineInBothDirections(String gpu) {
    int[] p = prompt(45, 10);
    List<Integer> expected = alone("cpu", greedy("a", p, 16));
    for (String[] pair : new String[][] {{gpu, "cpu"}, {"cpu", gpu}}) {
      try (BuiltinEngine prefill = engine(pair[0], 64, 512); BuiltinEngine decode = engine(pair[1], 64, 512)) {
        prefill.add(greedy("r", p, 1));
        prefill.holdKvOnFinish("r");
        int first = runToCompletion(prefill, new HashMap<>()).get("r").getFirst();
        int[] held = prefill.heldBlocks("r");
        PagedKvCache src = prefill.kvCache();
        BuiltinEngine.KvSource copy = (layer, i, keys, values) -> {
          MemorySegment.copy(src.keyBlock(layer, held[i]), 0, keys, 0, keys.byteSize());
          MemorySegment.copy(src.valueBlock(layer, held[i]), 0, values, 0, values.byteSize());
        };
        decode.addPrefilled(greedy("r", p, 16), first, copy);
        List<Integer> all = new ArrayList<>(List.of(first));
        all.addAll(runToCompletion(decode, new HashMap<>()).get("r"));
        assertEquals(expected, all, pair[0] + " prefill, " + pair[1] + " decode");
        assertTrue(prefill.releaseHeld("r"));
        assertEquals(0, decode.pool().usedBlocks());
      }
    }
  }
}
