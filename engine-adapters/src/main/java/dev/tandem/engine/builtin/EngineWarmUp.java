package dev.tandem.engine.builtin;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import java.util.SplittableRandom;

/**
 * Warms a built-in engine up before it serves: prefills {@code rounds} prompts of random tokens,
 * the first half of {@code tokens} long (not counted: a fresh JVM's first steps are several times
 * slower), then alternately a quarter of {@code tokens} and {@code tokens}, so that the kernels are
 * compiled and the prefill cost measured before the first request (a router deciding where to
 * prefill needs it); then decodes a few short prompts together (batch sizes 5 down to 1), then
 * clears the prefix cache of them.
 */
final class EngineWarmUp {
  private EngineWarmUp() {}

  /** Runs on the engine's thread, while no request is queued or running. */
  static void run(BuiltinEngine engine, Runnable resetPrefillCost, int tokens, int rounds) {
    if (engine.hasWork()) {
      throw new IllegalStateException("warm-up needs an idle engine");
    }
    int maxContext = engine.info().maxContextLength();
    int vocab = engine.modelConfig().vocabSize();
    SplittableRandom random = new SplittableRandom(rounds);
    for (int r = 0; r < rounds; r++) {
      // Alternate lengths, so that the fit can tell the per-token cost from attention's; the long
      // ones must be long enough for attention to be a good share of their time.
      int length = Math.min(r == 0 ? tokens / 2 : r % 2 == 1 ? tokens / 4 : tokens, maxContext - 1);
      int[] prompt = random.ints(length, 0, vocab).toArray();
      engine.add(new EngineRequest("warm-up-" + r, prompt, SamplingParams.greedy(), new StopConditions(1, new int[0], true)));
      drain(engine);
      if (r == 0) {
        resetPrefillCost.run(); // the first round ran before the JIT compiled the kernels
      }
    }
    // Decode at batch sizes 5 down to 1, after prompts of odd lengths: the kernels' remainder
    // paths (token counts that are not a multiple of their tiles) then run here. Without it the
    // JIT compiles them away, and the first odd batch while serving (a sixth stream joining five)
    // falls back to the interpreter for ~100 ms.
    for (int k = 0; k < 5; k++) {
      int length = Math.min(33 + 32 * k, maxContext - 16);
      int[] prompt = random.ints(length, 0, vocab).toArray();
      engine.add(new EngineRequest("warm-up-decode-" + k, prompt, SamplingParams.greedy(), new StopConditions(2 + 2 * k, new int[0], true)));
    }
    drain(engine);
    engine.pool().clearCache();
  }

  private static void drain(BuiltinEngine engine) {
    while (engine.hasWork()) {
      engine.step();
    }
  }
}
