package dev.tandem.engine.builtin;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import java.util.SplittableRandom;

/**
 * Warms a built-in engine up before it serves: prefills a prompt of random tokens half of
 * {@code tokens} long and decodes a few short prompts together (batch sizes 5 down to 1), neither
 * counted (a fresh JVM's first steps are several times slower); then passes of {@code rounds - 1}
 * prompts, alternately a quarter of {@code tokens} and {@code tokens}, so that the kernels are
 * compiled and the prefill cost measured before the first request (a router deciding where to
 * prefill needs it); then clears the prefix cache of them.
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
      engine.add(new EngineRequest("warm-up-decode-" + k, prompt, SamplingParams.greedy(), new StopConditions(2 + 2 * k, new int[0], true)));
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
    engine.pool().clearCache();
    return passes;
  }

  private static void prefill(BuiltinEngine engine, SplittableRandom random, int length, String id) {
    int[] prompt = random.ints(length, 0, engine.modelConfig().vocabSize()).toArray();
    engine.add(new EngineRequest(id, prompt, SamplingParams.greedy(), new StopConditions(1, new int[0], true)));
    drain(engine);
  }

  private static void drain(BuiltinEngine engine) {
    while (engine.hasWork()) {
      engine.step();
    }
  }
}
