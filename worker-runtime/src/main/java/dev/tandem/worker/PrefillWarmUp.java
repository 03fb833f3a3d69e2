package dev.tandem.worker;

import dev.tandem.common.WorkerId;
import dev.tandem.engine.builtin.BuiltinEngine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warms a built-in engine up and measures its prefill cost before a worker with KV transfer
 * registers: routers weigh remote against local prefill by the engines' measured prefill speed.
 * Other engines report their cost as they run.
 */
final class PrefillWarmUp {
  private static final Logger log = LoggerFactory.getLogger(PrefillWarmUp.class);

  private PrefillWarmUp() {}

  /** Runs the warm-up on the engine loop and waits for it. */
  static void run(WorkerId workerId, EngineLoop loop) {
    if (!(loop.engine() instanceof BuiltinEngine builtin)) {
      return;
    }
    long t0 = System.nanoTime();
    int passes = loop.call(e -> builtin.warmUp(1024, 5)).join(); // 512 (uncounted), then passes of 256, 1024, 256, 1024 tokens and probes at 2,048 and 4,096
    var cost = builtin.prefillCost();
    log.info("worker {}: warmed up in {} ms ({} measured passes); prefill {} ms per step + {} µs per token + {} ns per attended token ({} tokens/s at 512, {} at 4,096)",
        workerId, (System.nanoTime() - t0) / 1_000_000, passes, String.format("%.1f", cost.perStep() * 1e3),
        String.format("%.1f", cost.perToken() * 1e6), String.format("%.2f", cost.perContextToken() * 1e9),
        String.format("%.0f", cost.tokensPerSecond(512)), String.format("%.0f", cost.tokensPerSecond(4096)));
  }
}
