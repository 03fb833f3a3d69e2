package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.builtin.CudaTransformer;
import dev.tandem.engine.builtin.PagedKvCache;
import dev.tandem.engine.builtin.Transformer;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The per-kernel breakdown of a decode step, on the emulated GPU: every launch of the step is
 * counted under its kernel (q/k/v and gate/up fused, o and down alone, and the LM head; attention
 * split into parts and merged), with the weight bytes the matrix-vector kernels stream; and the
 * fused launches give the unfused ones' logits bit for bit.
 */
@Tag("emulation")
class TimedGpuTest {
  @Test
  void aDecodeStepsLaunchesAreCountedPerKernel(@TempDir Path dir) throws Exception {
    ModelConfig config = twoLayerModel(dir);
    TimedGpu gpu = new TimedGpu(TestGpus.emulated());
    try (ModelWeights weights = ModelWeights.load(dir, config);
        CudaBackend backend = new CudaBackend(gpu);
        PagedKvCache cache = new PagedKvCache(config, 8, 16, DType.BF16);
        CudaTransformer model = new CudaTransformer(weights, backend, cache, false)) {
      int[] tokens = {5, 9, 11, 3};
      int[] table = {0};
      model.forward(List.of(new Transformer.Slice(tokens, 0, 3, 0, table, true)), cache);
      gpu.report(); // the prefill's launches: not counted below
      model.forward(List.of(new Transformer.Slice(tokens, 3, 1, 3, table, true)), cache);
      Map<String, TimedGpu.KernelTime> step = gpu.report().stream()
          .collect(Collectors.toMap(TimedGpu.KernelTime::kernel, t -> t));
      assertEquals(2 * 2 + 1, step.get("matvec_bf16").launches(), "o and down a layer, and the LM head");
      assertEquals(2 * 2, step.get("matvecs_bf16").launches(), "q, k, v in one launch and gate, up in another, a layer");
      assertEquals(2L * 2 * (64 * 64 + 128 * 64) + 2L * 512 * 64, step.get("matvec_bf16").weightBytes());
      assertEquals(2L * 2 * (64 * 64 + 2 * 32 * 64 + 2 * 128 * 64), step.get("matvecs_bf16").weightBytes());
      assertEquals(2, step.get("attention_bf16").launches());
      assertEquals(2, step.get("attention_combine").launches(), "one row and 4 heads: the context is split");
      assertEquals(2, step.get("rms_norm").launches(), "the first layer's input norm and the final norm");
      assertEquals(2 * 2 - 1, step.get("add_rms_norm").launches(), "every other norm, with the residual before it");
      assertEquals(1, step.get("add").launches(), "the last layer's residual");
      assertTrue(step.values().stream().allMatch(t -> t.millis() >= 0));
      assertTrue(TimedGpu.lines(gpu.report()).isEmpty(), "a report starts over");
    }
  }

  @Test
  void fusedLaunchesGiveTheUnfusedLogitsBitForBit(@TempDir Path dir) throws Exception {
    ModelConfig config = twoLayerModel(dir);
    int[] tokens = {5, 9, 11, 3, 7, 1};
    int[] table = {0};
    float[][] logits = new float[2][];
    Map<String, TimedGpu.KernelTime> unfusedStep = null;
    for (int run = 0; run < 2; run++) {
      if (run == 1) {
        System.setProperty("tandem.cuda.fused", "false");
      }
      TimedGpu gpu = new TimedGpu(TestGpus.emulated());
      try (ModelWeights weights = ModelWeights.load(dir, config);
          CudaBackend backend = new CudaBackend(gpu);
          PagedKvCache cache = new PagedKvCache(config, 8, 16, DType.BF16);
          CudaTransformer model = new CudaTransformer(weights, backend, cache, false)) {
        model.forward(List.of(new Transformer.Slice(tokens, 0, 4, 0, table, true)), cache);
        gpu.report();
        logits[run] = model.forward(List.of(new Transformer.Slice(tokens, 4, 1, 4, table, true)), cache)[0];
        if (run == 1) {
          unfusedStep = gpu.report().stream().collect(Collectors.toMap(TimedGpu.KernelTime::kernel, t -> t));
        }
      } finally {
        System.clearProperty("tandem.cuda.fused");
      }
    }
    assertEquals(7 * 2 + 1, unfusedStep.get("matvec_bf16").launches(), "unfused: q, k, v, o, gate, up, down a layer, and the LM head");
    assertTrue(!unfusedStep.containsKey("matvecs_bf16") && !unfusedStep.containsKey("add_rms_norm"));
    org.junit.jupiter.api.Assertions.assertArrayEquals(logits[1], logits[0], 0f, "fused and unfused logits");
  }

  /** A 2-layer bf16 llama (hidden 64, 4 heads of 16, 2 KV heads, vocabulary 512) written to {@code dir}. */
  private static ModelConfig twoLayerModel(Path dir) throws Exception {
    var shape = ModelGenerator.config("LlamaForCausalLM", "llama", 64, 128, 2, 4, 2, 16, 512, false);
    shape.put("bos_token_id", 1).put("eos_token_id", 2);
    ModelGenerator.write(shape, DType.BF16, 9, dir, 0);
    return ModelConfig.read(dir);
  }
}
