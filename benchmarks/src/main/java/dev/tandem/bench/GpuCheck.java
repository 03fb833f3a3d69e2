package dev.tandem.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.builtin.CudaTransformer;
import dev.tandem.engine.builtin.ForwardPass;
import dev.tandem.engine.builtin.PagedKvCache;
import dev.tandem.engine.builtin.Transformer;
import dev.tandem.engine.compute.VectorBackend;
import dev.tandem.engine.cuda.CudaBackend;
import dev.tandem.engine.cuda.CudaDevice;
import dev.tandem.engine.cuda.CudaDriver;
import dev.tandem.engine.cuda.TimedGpu;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The Java half of the GPU device check ({@code benchmarks/gpu/device-check.sh}).
 *
 * <pre>
 * java ... dev.tandem.bench.GpuCheck create DIR SHAPE DTYPE          a model as `tandem model create` writes it
 * java ... dev.tandem.bench.GpuCheck check OUT.json MODEL_DIR...     cuda against cpu, then cuda's speed
 * </pre>
 *
 * <p>check, per model: the logits after a 64-token and a 1,000-token prompt from {@code cuda} (the
 * engine's device forward pass) against {@code cpu} (max difference ÷ the largest cpu logit), then
 * 32 greedy steps on each (how many leading tokens agree); decode tokens/s at batch 1, 8, 32 and 128 (128-token
 * prompts) and whole-prompt prefill tokens/s at 512, 2,048 and 8,192 tokens, on the engine with
 * {@code --compute cuda}; the forward pass's decode step alone at the same batch sizes (what the
 * engine adds is the difference) and a batch-32 step kernel by kernel; then where the device time
 * goes, kernel by kernel, in a batch-1 decode step and a 2,048-token prefill. Progress goes to stderr, the figures to OUT.json.
 */
public final class GpuCheck {
  private static final int[] BATCHES = {1, 8, 32, 128};
  private static final int[] PROMPTS = {512, 2048, 8192};
  private static final int BLOCK = 16;

  private GpuCheck() {}

  public static void main(String[] args) throws Exception {
    switch (args.length > 0 ? args[0] : "") {
      case "create" -> {
        long start = System.nanoTime();
        ModelGenerator.write(ModelGenerator.shape(args[2]), DType.fromShortName(args[3]), 1234, Path.of(args[1]), 0);
        progress("created %s (%s, %s) in %.1f s", args[1], args[2], args[3], (System.nanoTime() - start) / 1e9);
      }
      case "check" -> check(Path.of(args[1]), List.of(args).subList(2, args.length).stream().map(Path::of).toList());
      default -> {
        System.err.println("usage: GpuCheck create DIR SHAPE DTYPE | GpuCheck check OUT.json MODEL_DIR...");
        System.exit(2);
      }
    }
  }

  private static void check(Path out, List<Path> models) throws Exception {
    ObjectMapper json = new ObjectMapper();
    ObjectNode report = json.createObjectNode();
    if (!CudaDriver.available()) {
      throw new IllegalStateException("no CUDA device: " + CudaDriver.unavailableReason());
    }
    try (CudaDevice device = CudaDevice.open(0)) {
      progress("%s", device);
      report.put("device", device.name()).put("compute_capability", device.computeCapability())
          .put("driver_cuda", CudaDriver.version()).put("ptx", device.ptx()).put("memory_bytes", device.totalMemory());
    }
    ArrayNode results = report.putArray("models");
    for (Path dir : models) {
      ObjectNode m = results.addObject().put("model", dir.getFileName().toString());
      try {
        agreement(dir, m, 64, "");
        agreement(dir, m, 1000, "_1000"); // the tiled prefill attention over 32 tiles
        speed(dir, m);
        forwardDecode(dir, m);
        breakdown(dir, m);
      } catch (RuntimeException e) {
        progress("%s: FAILED %s", dir.getFileName(), e);
        m.put("error", e.toString());
      }
      Files.writeString(out, json.writerWithDefaultPrettyPrinter().writeValueAsString(report));
    }
    Files.writeString(out, json.writerWithDefaultPrettyPrinter().writeValueAsString(report));
  }

  /** cuda's logits and greedy tokens against cpu's on the same prompt of {@code length} tokens. */
  private static void agreement(Path dir, ObjectNode m, int length, String suffix) {
    ModelConfig config = ModelConfig.read(dir);
    int[] prompt = new SplittableRandom(7).ints(length, 0, Math.min(config.vocabSize(), 100_000)).toArray();
    int steps = 32;
    int blocks = (length + steps + BLOCK - 1) / BLOCK;
    try (ModelWeights weights = ModelWeights.load(dir, config);
        VectorBackend cpuBackend = new VectorBackend(0);
        CudaBackend cudaBackend = new CudaBackend(CudaDevice.open(0));
        PagedKvCache cpuCache = new PagedKvCache(config, blocks, BLOCK, config.torchDtype());
        PagedKvCache cudaCache = new PagedKvCache(config, blocks, BLOCK, config.torchDtype());
        ForwardPass cpu = new Transformer(weights, cpuBackend, BLOCK);
        ForwardPass cuda = new CudaTransformer(weights, cudaBackend, cudaCache)) {
      long start = System.nanoTime();
      float[] reference = cpu.forward(List.of(slice(prompt, 0, prompt.length, blocks)), cpuCache)[0];
      float[] logits = cuda.forward(List.of(slice(prompt, 0, prompt.length, blocks)), cudaCache)[0];
      double error = relativeError(reference, logits);
      List<Integer> cpuTokens = greedy(cpu, cpuCache, prompt, reference, steps, blocks);
      List<Integer> cudaTokens = greedy(cuda, cudaCache, prompt, logits, steps, blocks);
      int same = 0;
      while (same < steps && cpuTokens.get(same).equals(cudaTokens.get(same))) {
        same++;
      }
      progress("%s, %d-token prompt: prefill logits relative error %.2e; greedy tokens identical for %d of %d steps (%.1f s)",
          dir.getFileName(), length, error, same, steps, (System.nanoTime() - start) / 1e9);
      m.put("logits_relative_error" + suffix, error).put("greedy_identical_steps" + suffix, same).put("greedy_steps", steps);
    }
  }

  private static List<Integer> greedy(ForwardPass pass, PagedKvCache cache, int[] prompt, float[] logits, int steps, int blocks) {
    int[] tokens = java.util.Arrays.copyOf(prompt, prompt.length + steps);
    List<Integer> out = new ArrayList<>();
    for (int s = 0; s < steps; s++) {
      int next = argmax(logits);
      out.add(next);
      tokens[prompt.length + s] = next;
      if (s + 1 < steps) {
        logits = pass.forward(List.of(slice(tokens, prompt.length + s, 1, blocks)), cache)[0];
      }
    }
    return out;
  }

  private static Transformer.Slice slice(int[] tokens, int from, int count, int blocks) {
    int[] table = new int[blocks];
    for (int i = 0; i < table.length; i++) {
      table[i] = i;
    }
    return new Transformer.Slice(tokens, from, count, from, table, true);
  }

  /** Decode and prefill tokens/s on the engine with the cuda backend. */
  private static void speed(Path dir, ObjectNode m) {
    BuiltinConfig base = BuiltinConfig.of(dir).withCompute("cuda", 0).withKvCacheBytes(4L << 30);
    ObjectNode decode = m.putObject("decode_tokens_per_s");
    try (BuiltinEngine engine = BuiltinEngine.open(base.withBatching(128, 8192, true))) {
      m.put("bytes_per_token", engine.bytesReadPerToken());
      for (int batch : BATCHES) {
        double tps = EngineThroughput.decode(engine, batch, 128, 32);
        progress("%s: decode batch %d: %.1f tokens/s", dir.getFileName(), batch, tps);
        decode.put(Integer.toString(batch), tps);
      }
    }
    ObjectNode prefill = m.putObject("prefill_tokens_per_s");
    for (int prompt : PROMPTS) {
      double tps = EngineThroughput.prefill(base.withBatching(1, prompt, false).withMaxContextLength(prompt + 8), prompt);
      progress("%s: prefill %d tokens: %.1f tokens/s (%.1f ms)", dir.getFileName(), prompt, tps, 1000.0 * prompt / tps);
      prefill.put(Integer.toString(prompt), tps);
    }
  }

  /**
   * A decode step of the forward pass alone (graphs on, as the engine runs it) at each batch size,
   * in ms, beside the engine's step: the difference is the engine's own host work (sampling,
   * scheduling); at batch 1 and 8 also without the fused launches. Then one batch-32 step kernel
   * by kernel (graphs off).
   */
  private static void forwardDecode(Path dir, ObjectNode m) {
    ModelConfig config = ModelConfig.read(dir);
    int prompt = 128;
    int steps = 16;
    int perSequence = (prompt + steps + 8) / BLOCK + 1;
    ObjectNode out = m.putObject("forward_decode_ms_per_step");
    try (ModelWeights weights = ModelWeights.load(dir, config)) {
      for (int batch : BATCHES) {
        try (CudaBackend backend = new CudaBackend(CudaDevice.open(0));
            PagedKvCache cache = new PagedKvCache(config, batch * perSequence, BLOCK, config.torchDtype());
            ForwardPass pass = new CudaTransformer(weights, backend, cache)) {
          double ms = decodeSteps(pass, cache, config, batch, prompt, steps, perSequence);
          progress("%s: forward pass alone, decode batch %d: %.3f ms a step (%.1f tokens/s)", dir.getFileName(), batch, ms, batch * 1000 / ms);
          out.put(Integer.toString(batch), ms);
        }
      }
      // The same without the fused launches (q/k/v, gate/up, residual + norm), for what they save.
      System.setProperty("tandem.cuda.fused", "false");
      try {
        for (int batch : new int[] {1, 8}) {
          try (CudaBackend backend = new CudaBackend(CudaDevice.open(0));
              PagedKvCache cache = new PagedKvCache(config, batch * perSequence, BLOCK, config.torchDtype());
              ForwardPass pass = new CudaTransformer(weights, backend, cache)) {
            double ms = decodeSteps(pass, cache, config, batch, prompt, steps, perSequence);
            progress("%s: forward pass alone, unfused, decode batch %d: %.3f ms a step", dir.getFileName(), batch, ms);
            out.put("unfused_" + batch, ms);
          }
        }
      } finally {
        System.clearProperty("tandem.cuda.fused");
      }
      TimedGpu gpu = new TimedGpu(CudaDevice.open(0));
      int batch = 32;
      try (CudaBackend backend = new CudaBackend(gpu);
          PagedKvCache cache = new PagedKvCache(config, batch * perSequence, BLOCK, config.torchDtype());
          ForwardPass pass = new CudaTransformer(weights, backend, cache, false)) {
        decodeSteps(pass, cache, config, batch, prompt, 1, perSequence);
        gpu.report(); // the prefill and the warm-up
        decodeSteps(pass, cache, config, batch, prompt, 1, perSequence, false);
        List<TimedGpu.KernelTime> step = gpu.report();
        progress("%s: decode_batch32_step, kernel by kernel:", dir.getFileName());
        TimedGpu.lines(step).forEach(line -> progress("  %s", line));
        var rows = m.putObject("kernel_breakdown_batch32").putArray("decode_batch32_step");
        for (TimedGpu.KernelTime t : step) {
          rows.addObject().put("kernel", t.kernel()).put("launches", t.launches()).put("ms", t.millis())
              .put("weight_gb_per_s", t.bytesPerSecond() / 1e9);
        }
      }
    }
  }

  private static double decodeSteps(ForwardPass pass, PagedKvCache cache, ModelConfig config, int batch, int prompt, int steps, int perSequence) {
    return decodeSteps(pass, cache, config, batch, prompt, steps, perSequence, true);
  }

  /**
   * Prefills {@code batch} prompts (when {@code prefill}), then times {@code steps} decode steps of
   * every sequence after three untimed ones; ms a step.
   */
  private static double decodeSteps(
      ForwardPass pass, PagedKvCache cache, ModelConfig config, int batch, int prompt, int steps, int perSequence, boolean prefill) {
    SplittableRandom random = new SplittableRandom(batch);
    int length = prompt + steps + 8;
    int[][] tokens = new int[batch][];
    int[][] tables = new int[batch][perSequence];
    for (int b = 0; b < batch; b++) {
      tokens[b] = random.ints(length, 0, Math.min(config.vocabSize(), 100_000)).toArray();
      for (int i = 0; i < perSequence; i++) {
        tables[b][i] = b * perSequence + i;
      }
    }
    int position = prompt;
    if (prefill) {
      List<Transformer.Slice> slices = new ArrayList<>();
      for (int b = 0; b < batch; b++) {
        slices.add(new Transformer.Slice(tokens[b], 0, prompt, 0, tables[b], true));
      }
      pass.forward(slices, cache);
      for (int s = 0; s < 3; s++, position++) {
        pass.forward(decodeSlices(tokens, tables, position), cache);
      }
    } else {
      position += 3;
    }
    long start = System.nanoTime();
    for (int s = 0; s < steps; s++, position++) {
      pass.forward(decodeSlices(tokens, tables, position), cache);
    }
    return (System.nanoTime() - start) / 1e6 / steps;
  }

  private static List<Transformer.Slice> decodeSlices(int[][] tokens, int[][] tables, int position) {
    List<Transformer.Slice> slices = new ArrayList<>(tokens.length);
    for (int b = 0; b < tokens.length; b++) {
      slices.add(new Transformer.Slice(tokens[b], position, 1, position, tables[b], true));
    }
    return slices;
  }

  /**
   * Where the device time goes, kernel by kernel (events around each launch, graphs off): a batch-1
   * decode step (mean of 16, after a 128-token prompt) and a 2,048-token prefill.
   */
  private static void breakdown(Path dir, ObjectNode m) {
    ModelConfig config = ModelConfig.read(dir);
    int prompt = 2048;
    int steps = 16;
    int blocks = (prompt + steps + BLOCK) / BLOCK + 1;
    TimedGpu gpu = new TimedGpu(CudaDevice.open(0));
    try (ModelWeights weights = ModelWeights.load(dir, config);
        CudaBackend backend = new CudaBackend(gpu);
        PagedKvCache cache = new PagedKvCache(config, 2 * blocks, BLOCK, config.torchDtype());
        ForwardPass pass = new CudaTransformer(weights, backend, cache, false)) {
      int[] tokens = new SplittableRandom(11).ints(prompt + steps, 0, Math.min(config.vocabSize(), 100_000)).toArray();
      pass.forward(List.of(slice(tokens, 0, 128, blocks)), cache); // warm-up, and the decode's context
      gpu.report();
      for (int s = 0; s < steps; s++) {
        pass.forward(List.of(slice(tokens, 128 + s, 1, blocks)), cache);
      }
      List<TimedGpu.KernelTime> decode = perStep(gpu.report(), steps);
      int[] fresh = new int[blocks];
      for (int i = 0; i < blocks; i++) {
        fresh[i] = blocks + i;
      }
      pass.forward(List.of(new Transformer.Slice(tokens, 0, prompt, 0, fresh, true)), cache);
      List<TimedGpu.KernelTime> prefill = gpu.report();
      ObjectNode out = m.putObject("kernel_breakdown");
      for (var part : List.of(java.util.Map.entry("decode_batch1_step", decode), java.util.Map.entry("prefill_2048", prefill))) {
        progress("%s: %s, kernel by kernel:", dir.getFileName(), part.getKey());
        TimedGpu.lines(part.getValue()).forEach(line -> progress("  %s", line));
        var rows = out.putArray(part.getKey());
        for (TimedGpu.KernelTime t : part.getValue()) {
          rows.addObject().put("kernel", t.kernel()).put("launches", t.launches()).put("ms", t.millis())
              .put("weight_gb_per_s", t.bytesPerSecond() / 1e9);
        }
      }
    }
    // The same prefill's attention on the SIMT kernel, for what the tensor-core one saves.
    System.setProperty("tandem.cuda.tensorCoreAttention", "false");
    TimedGpu simtGpu = new TimedGpu(CudaDevice.open(0));
    try (ModelWeights weights = ModelWeights.load(dir, config);
        CudaBackend backend = new CudaBackend(simtGpu);
        PagedKvCache cache = new PagedKvCache(config, blocks, BLOCK, config.torchDtype());
        ForwardPass pass = new CudaTransformer(weights, backend, cache, false)) {
      int[] tokens = new SplittableRandom(11).ints(prompt, 0, Math.min(config.vocabSize(), 100_000)).toArray();
      int[] table = new int[blocks];
      for (int i = 0; i < blocks; i++) {
        table[i] = i;
      }
      pass.forward(List.of(new Transformer.Slice(tokens, 0, prompt, 0, table, true)), cache); // warm-up
      simtGpu.report();
      pass.forward(List.of(new Transformer.Slice(tokens, 0, prompt, 0, table, true)), cache);
      for (TimedGpu.KernelTime t : simtGpu.report()) {
        if (t.kernel().startsWith("attention_tiled")) {
          progress("%s: prefill_2048 on the SIMT attention kernel: %s %.3f ms", dir.getFileName(), t.kernel(), t.millis());
          m.put("prefill_2048_simt_attention_ms", t.millis());
        }
      }
    } finally {
      System.clearProperty("tandem.cuda.tensorCoreAttention");
    }
  }

  private static List<TimedGpu.KernelTime> perStep(List<TimedGpu.KernelTime> total, int steps) {
    return total.stream()
        .map(t -> new TimedGpu.KernelTime(t.kernel(), t.launches() / steps, t.millis() / steps, t.weightBytes() / steps))
        .toList();
  }

  static double relativeError(float[] reference, float[] actual) {
    double diff = 0;
    double scale = 1e-30;
    for (int i = 0; i < reference.length; i++) {
      diff = Math.max(diff, Math.abs(reference[i] - actual[i]));
      scale = Math.max(scale, Math.abs(reference[i]));
    }
    return diff / scale;
  }

  private static int argmax(float[] logits) {
    int best = 0;
    for (int i = 1; i < logits.length; i++) {
      if (logits[i] > logits[best]) {
        best = i;
      }
    }
    return best;
  }

  private static void progress(String format, Object... args) {
    System.err.printf(Locale.ROOT, "[gpu-check] " + format + "%n", args);
  }
}
