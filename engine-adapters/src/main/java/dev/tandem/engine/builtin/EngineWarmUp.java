package dev.tandem.engine.builtin;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvHandoff;
import dev.tandem.engine.RequestOutput;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * Warms a built-in engine up before it serves: prefills a prompt of random tokens half of
 * {@code tokens} long and decodes a few short prompts together (batch sizes 5 down to 1), neither
 * counted (a fresh JVM's first steps are several times slower); then passes of {@code rounds - 1}
 * prompts, alternately a quarter of {@code tokens} and {@code tokens}, so that the kernels are
 * compiled and the prefill cost measured before the first request (a router deciding where to
 * prefill needs it); then two probes of attention at depth; then clears the prefix cache of
 * them.
 *
 * <p>Prompts of the warm-up's lengths spend a few percent of their steps in attention, too little
 * for the fit to tell its cost from noise: on llama-100m it put 0 ns on an attended token in three
 * fresh workers of five, and their first 3,500-token prompt took 1.3–1.5× its prediction. A probe imports a context of {@code depth}
 * random tokens without computing it (as a decode worker takes a prefill's KV: attention costs the
 * same whatever the values), then prefills one step's token budget (at most 512) after it — a
 * chunk of a long prompt, mostly attention — at half and all of {@link #probeDepth} (up to 4 ×
 * {@code tokens}).
 * They run once, after the passes: their two steps join the last pass's in the fit.
 *
 * <p>The JIT goes on compiling through the first passes, and a fit over them reads the engine
 * slower than it is (a 2-layer model measured 5,300 tokens/s where it serves at 75,000; a
 * 100M one 2,000 where it serves at 2,900). A router would then not send a prefill worker the
 * prompts that correct its figure. So passes repeat, each fitted afresh, until one agrees with the
 * one before within {@link #AGREE}, for at most {@link #MAX_PASSES} passes and while the warm-up
 * has run less than {@link #BUDGET_NANOS}: a large model's first pass takes longer than the
 * budget, and the JIT is a small share of it.
 */
final class EngineWarmUp {
  static final int MAX_PASSES = 12;
  static final long BUDGET_NANOS = 10_000_000_000L;
  static final double AGREE = 0.1;

  private EngineWarmUp() {}

  /** Runs on the engine's thread, while no request is queued or running; returns the measured passes it took. */
  static int run(BuiltinEngine engine, Runnable resetPrefillCost, int tokens, int rounds) {
    if (engine.hasWork()) {
      throw new IllegalStateException("warm-up needs an idle engine");
    }
    int maxContext = engine.info().maxContextLength();
    int vocab = engine.modelConfig().vocabSize();
    SplittableRandom random = new SplittableRandom(rounds);
    long started = System.nanoTime();
    prefill(engine, random, Math.min(tokens / 2, maxContext - 1), "warm-up-0");
    // Decode at batch sizes 5 down to 1, after prompts of odd lengths: the kernels' remainder
    // paths (token counts that are not a multiple of their tiles) then run here, before the
    // prefill cost is measured (their first steps are slow). Without it the JIT compiles them
    // away, and the first odd batch while serving (a sixth stream joining five) falls back to the
    // interpreter for ~100 ms.
    for (int k = 0; k < 5; k++) {
      int length = Math.min(33 + 32 * k, maxContext - 16);
      int[] prompt = random.ints(length, 0, vocab).toArray();
      engine.add(request("warm-up-decode-" + k, prompt, 2 + 2 * k));
    }
    drain(engine);
    double previous = Double.NaN;
    int passes = 0;
    while (passes < MAX_PASSES) {
      int pass = passes++;
      resetPrefillCost.run(); // the rounds before ran with kernels the JIT had not compiled yet
      for (int r = 1; r < rounds; r++) {
        // Alternate lengths, so that the fit can tell the per-token cost from attention's; the long
        // ones must be long enough for attention to be a good share of their time.
        prefill(engine, random, Math.min(r % 2 == 1 ? tokens / 4 : tokens, maxContext - 1), "warm-up-" + pass + "-" + r);
      }
      double speed = engine.prefillCost().tokensPerSecond(tokens);
      if (Math.abs(speed - previous) <= AGREE * previous || System.nanoTime() - started >= BUDGET_NANOS) {
        break;
      }
      previous = speed;
    }
    int depth = probeDepth(engine, tokens);
    if (depth > 0) {
      probe(engine, random, depth / 2, "warm-up-probe-a");
      probe(engine, random, depth, "warm-up-probe-b");
    }
    engine.pool().clearCache();
    return passes;
  }

  /**
   * The deepest probe: 4 × {@code tokens}, within the context window and half the KV pool (the
   * context's blocks and the probe's own), in whole blocks; 0 where that is no deeper than the
   * prompts.
   */
  static int probeDepth(BuiltinEngine engine, int tokens) {
    int blockSize = engine.pool().blockSize();
    int chunk = probeTokens(engine);
    long room = Math.min(engine.info().maxContextLength() - chunk - 2, (long) engine.pool().totalBlocks() / 2 * blockSize - chunk - blockSize);
    int depth = (int) (Math.min(4L * tokens, room) / blockSize * blockSize);
    return depth > tokens ? depth : 0;
  }

  /** A probe's new tokens: one step's budget, as a long prompt's chunks have (at most 512: a probe stays a fraction of a second). */
  private static int probeTokens(BuiltinEngine engine) {
    return Math.min(engine.info().batching().maxBatchedTokens(), 512);
  }

  /** One probe; returns the prompt tokens its step found cached (the context: {@code depth}), -1 if it found no room. */
  static int probe(BuiltinEngine engine, SplittableRandom random, int depth, String id) {
    int vocab = engine.modelConfig().vocabSize();
    int[] context = random.ints(depth, 0, vocab).toArray();
    KvHandoff.PendingImport pending = engine.beginImport(
        request(id + "-context", context, 2));
    if (pending == null) {
      return -1; // no room after all: the fit goes without this probe
    }
    engine.commitImport(pending, context[0]);
    drain(engine); // one decode step; the context's blocks stay cached
    int[] prompt = IntStream.concat(Arrays.stream(context), random.ints(probeTokens(engine), 0, vocab)).toArray();
    engine.add(request(id, prompt, 1));
    return drain(engine, id);
  }

  /**
   * A greedy warm-up request of {@code maxTokens} that also asks for the prompt's pooled output, so
   * that a pooling-only engine (a model without an LM head) takes it too; only timings are read.
   */
  private static EngineRequest request(String id, int[] prompt, int maxTokens) {
    return new EngineRequest(id, prompt, SamplingParams.greedy(), new StopConditions(maxTokens, new int[0], true)).withEmbedding();
  }

  private static void prefill(BuiltinEngine engine, SplittableRandom random, int length, String id) {
    int[] prompt = random.ints(length, 0, engine.modelConfig().vocabSize()).toArray();
    engine.add(request(id, prompt, 1));
    drain(engine);
  }

  private static void drain(BuiltinEngine engine) {
    drain(engine, null);
  }

  /** Steps until the engine is idle; returns the prompt tokens request {@code id} found cached (-1 if it made no output). */
  private static int drain(BuiltinEngine engine, String id) {
    int cached = -1;
    while (engine.hasWork()) {
      for (RequestOutput out : engine.step()) {
        cached = out.requestId().equals(id) ? out.cachedTokens() : cached;
      }
    }
    return cached;
  }
}
