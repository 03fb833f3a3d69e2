package dev.tandem.engine.builtin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.compute.ScalarBackend;
import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.cuda.EmulatedGpu;
import dev.tandem.engine.cuda.Gpu;
import dev.tandem.engine.cuda.TestGpus;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The GPU forward pass keeps the host cache as the source of truth: every entry it writes reaches
 * the host cache with the device's bits, blocks an import writes into the host cache reach the
 * device (and those a cuda-ipc import writes into the device copy reach the host cache), and the cache can move (relocation) between steps. On GPU 0 (skipped, with the
 * driver's reason, where none initialises) and on the {@link EmulatedGpu} (tandem.cu's kernels
 * compiled for the CPU; skipped without g++ or CUDA's headers). Tagged {@code emulation}: left out
 * of the fast tier.
 */
@Tag("emulation")
class CudaTransformerTest {
  private static final int BLOCK = 8;

  static Stream<Arguments> cases() {
    List<Arguments> all = new ArrayList<>();
    for (String gpu : List.of("cuda", "emulated")) {
      for (DType kv : List.of(DType.F32, DType.BF16, DType.F16)) {
        all.add(Arguments.of(gpu, kv));
      }
    }
    return all.stream();
  }

  @ParameterizedTest(name = "{0}, KV {1}")
  @MethodSource("cases")
  void hostAndDeviceCachesHoldTheSameBits(String kind, DType kvDtype, @TempDir Path dir) throws Exception {
    Gpu gpu = TestGpus.open(kind);
    ModelConfig config = smallModel(dir, DType.BF16, 7);
    Random random = new Random(11);
    try (ModelWeights weights = ModelWeights.load(dir, config);
        CudaBackend backend = new CudaBackend(gpu);
        PagedKvCache cache = new PagedKvCache(config, 16, BLOCK, kvDtype);
        CudaTransformer model = new CudaTransformer(weights, backend, cache);
        Arena arena = Arena.ofShared()) {
      int[] prompt = random.ints(37, 0, config.vocabSize()).toArray();
      int[] table = {3, 9, 4, 12, 1};
      model.forward(List.of(new Transformer.Slice(prompt, 0, prompt.length, 0, table, true)), cache);
      assertCachesEqual(model, cache, "after a prefill");

      // An import writes blocks 5 and 6 of the host cache; the device copies them.
      for (int l = 0; l < cache.layers(); l++) {
        for (int b : new int[] {5, 6}) {
          randomBytes(cache.keyBlock(l, b), random);
          randomBytes(cache.valueBlock(l, b), random);
        }
      }
      model.hostBlocksWritten(cache, new int[] {3, 5, 6}, 1);
      assertCachesEqual(model, cache, "after an import");

      // A cuda-ipc import writes blocks 7 and 8 of the device copy; the host cache copies them.
      var device = model.deviceKv().orElseThrow();
      List<MemorySegment[]> written = new ArrayList<>(); // the bytes, and the host block they belong in
      for (int l = 0; l < cache.layers(); l++) {
        for (int b : new int[] {7, 8}) {
          for (boolean ofKeys : new boolean[] {true, false}) {
            MemorySegment bytes = arena.allocate(cache.blockBytes());
            randomBytes(bytes, random);
            MemorySegment layer = ofKeys ? device.keys().get(l) : device.values().get(l);
            gpu.copyToDevice(layer.address() + b * cache.blockBytes(), bytes);
            written.add(new MemorySegment[] {bytes, ofKeys ? cache.keyBlock(l, b) : cache.valueBlock(l, b)});
          }
        }
      }
      model.deviceBlocksWritten(cache, new int[] {3, 7, 8}, 1);
      for (MemorySegment[] w : written) {
        assertEquals(-1, w[0].mismatch(w[1]), "a block written into the device copy is in the host cache");
      }
      assertCachesEqual(model, cache, "after an import into the device copy");

      // The commit's copy, timed on scratch memory: figures, and the cache untouched.
      var copy = model.measureHostDeviceCopy(1 << 20).orElseThrow();
      assertTrue(copy.toDeviceBytesPerSecond() > 0 && Double.isFinite(copy.toDeviceBytesPerSecond()), copy.toString());
      assertTrue(copy.toHostBytesPerSecond() > 0 && Double.isFinite(copy.toHostBytesPerSecond()), copy.toString());
      assertCachesEqual(model, cache, "after timing the commit's copy");

      // The host cache moves into other memory; the next step maps the new memory and writes there.
      model.hostCacheMoving();
      BitSet every = new BitSet();
      every.set(0, 16); // the whole cache, so that it still equals the device copy byte for byte
      cache.relocate(bytes -> arena.allocate(bytes, 4096), every);
      int[] next = {prompt[0]};
      model.forward(List.of(new Transformer.Slice(next, 0, 1, prompt.length, table, true)), cache);
      assertCachesEqual(model, cache, "after relocation and a decode step");
      if (gpu instanceof EmulatedGpu emulated) {
        model.close();
        assertEquals(0, emulated.mappedRanges(), "the host cache is unmapped when the pass closes");
      }
    }
  }

  /**
   * Decode steps replay a recorded graph per batch size, with each step's ids, positions and
   * growing block tables copied into the graph's own buffers (and a new recording when the tables
   * outgrow them, as the first sequence's do here): the logits, and the final norm's output behind
   * them, match the host pass at every step.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"cuda", "emulated"})
  void decodeStepsFromGraphsMatchTheHostPass(String kind, @TempDir Path dir) throws Exception {
    Gpu gpu = TestGpus.open(kind);
    ModelConfig config = smallModel(dir, DType.F32, 5);
    Random random = new Random(3);
    int steps = 60;
    try (ModelWeights weights = ModelWeights.load(dir, config);
        CudaBackend backend = new CudaBackend(gpu);
        ScalarBackend reference = new ScalarBackend();
        PagedKvCache deviceSide = new PagedKvCache(config, 32, BLOCK, DType.F32);
        PagedKvCache hostSide = new PagedKvCache(config, 32, BLOCK, DType.F32);
        CudaTransformer model = new CudaTransformer(weights, backend, deviceSide)) {
      Transformer host = new Transformer(weights, reference, BLOCK);
      int[][] tokens = {random.ints(1 + steps, 0, 1024).toArray(), random.ints(13 + steps, 0, 1024).toArray()};
      int[] prompt = {1, 13};
      int[][] blocks = {{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22}, {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}};
      for (int i = 0; i < 2; i++) {
        var slice = List.of(new Transformer.Slice(tokens[i], 0, prompt[i], 0, table(blocks[i], prompt[i]), true));
        model.forward(slice, deviceSide);
        host.forward(slice, hostSide);
        assertClose(host.finalHidden(0), model.finalHidden(0), "prompt " + i + " hidden state");
      }
      int launchesBefore = gpu instanceof EmulatedGpu e ? e.graphLaunches() : 0;
      for (int step = 0; step < steps; step++) {
        List<Transformer.Slice> slices = new ArrayList<>();
        for (int i = 0; i < (step < steps / 2 ? 1 : 2); i++) { // batch 1, then batch 2
          int p = prompt[i] + step;
          slices.add(new Transformer.Slice(tokens[i], p, 1, p, table(blocks[i], p + 1), true));
        }
        float[][] got = model.forward(slices, deviceSide);
        float[][] want = host.forward(slices, hostSide);
        for (int i = 0; i < slices.size(); i++) {
          assertClose(want[i], got[i], "step " + step + " sequence " + i);
          // the final norm's output (an embedding's vector), read back from the replayed graph's buffer
          assertClose(host.finalHidden(i), model.finalHidden(i), "step " + step + " sequence " + i + " hidden state");
        }
      }
      if (gpu instanceof EmulatedGpu e) {
        assertEquals(steps, e.graphLaunches() - launchesBefore, "every decode step replays a graph");
      }
    }
  }

  /**
   * A device that refuses to record graphs (an old driver, a capture the stream does not allow):
   * decode steps run kernel by kernel instead, with the same logits, and no step tries again.
   */
  @org.junit.jupiter.api.Test
  void aDeviceThatRefusesGraphsStillDecodes(@TempDir Path dir) throws Exception {
    Gpu emulated = TestGpus.emulated();
    int[] captures = {0};
    Gpu refusing = (Gpu) java.lang.reflect.Proxy.newProxyInstance(Gpu.class.getClassLoader(), new Class<?>[] {Gpu.class},
        (proxy, method, args) -> {
          if (method.getName().equals("beginCapture")) {
            captures[0]++;
            throw new dev.tandem.engine.cuda.CudaException("cuStreamBeginCapture", 900);
          }
          try {
            return method.invoke(emulated, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
    ModelConfig config = smallModel(dir, DType.F32, 5);
    try (ModelWeights weights = ModelWeights.load(dir, config);
        CudaBackend backend = new CudaBackend(refusing);
        ScalarBackend reference = new ScalarBackend();
        PagedKvCache deviceSide = new PagedKvCache(config, 8, BLOCK, DType.F32);
        PagedKvCache hostSide = new PagedKvCache(config, 8, BLOCK, DType.F32);
        CudaTransformer model = new CudaTransformer(weights, backend, deviceSide, true)) {
      Transformer host = new Transformer(weights, reference, BLOCK);
      int[] tokens = {7, 300, 12, 45, 999, 3};
      int[] table = {2, 5};
      for (int p = 0; p < tokens.length; p++) {
        var slice = List.of(new Transformer.Slice(tokens, p, 1, p, table, true));
        assertClose(host.forward(slice, hostSide)[0], model.forward(slice, deviceSide)[0], "step " + p);
      }
      assertEquals(1, captures[0], "the first refusal turns graphs off");
    }
  }

  /** The tiny shape with a 1,024-token vocabulary: the LM head is what an emulated pass spends on. */
  private static ModelConfig smallModel(Path dir, DType dtype, long seed) throws Exception {
    var shape = ModelGenerator.config("Qwen3ForCausalLM", "qwen3", 64, 128, 2, 4, 2, 16, 1024, true);
    shape.put("bos_token_id", 1).put("eos_token_id", 2);
    ModelGenerator.write(shape, dtype, seed, dir, 0);
    return ModelConfig.read(dir);
  }

  /** The first blocks a sequence of {@code length} tokens needs: its table grows as it does. */
  private static int[] table(int[] blocks, int length) {
    return java.util.Arrays.copyOf(blocks, (length + BLOCK - 1) / BLOCK);
  }

  private static void assertClose(float[] expected, float[] actual, String what) {
    double diff = 0;
    double scale = 1e-30;
    for (int i = 0; i < expected.length; i++) {
      diff = Math.max(diff, Math.abs(expected[i] - actual[i]));
      scale = Math.max(scale, Math.abs(expected[i]));
    }
    org.junit.jupiter.api.Assertions.assertTrue(diff / scale < 1e-4, what + ": relative error " + diff / scale);
  }

  private static void randomBytes(MemorySegment block, Random random) {
    for (long i = 0; i < block.byteSize(); i += 2) {
      block.set(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) (random.nextInt(0x7000) + 0x1000)); // finite in every dtype
    }
  }

  private static void assertCachesEqual(CudaTransformer model, PagedKvCache cache, String when) {
    for (int l = 0; l < cache.layers(); l++) {
      byte[] host = cache.keys(l).toArray(ValueLayout.JAVA_BYTE);
      assertEquals(host.length, model.deviceCache(l, true).length);
      assertArrayEquals(host, model.deviceCache(l, true), "keys of layer " + l + " " + when);
      assertArrayEquals(cache.values(l).toArray(ValueLayout.JAVA_BYTE), model.deviceCache(l, false), "values of layer " + l + " " + when);
    }
  }
}
