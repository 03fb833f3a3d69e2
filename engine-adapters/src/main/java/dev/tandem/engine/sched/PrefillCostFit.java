package dev.tandem.engine.sched;

import dev.tandem.common.PrefillCost;

/**
 * An engine's prefill cost, fitted as it runs: each step that was (nearly) all prefill adds a
 * sample (prefill tokens, earlier tokens they attended to, seconds) to a ring of the last 32, and
 * {@link PrefillCost#fit} is refitted over the ring.
 *
 * <p>Not thread-safe: the engine's thread records; {@link #cost} is read through a volatile.
 */
public final class PrefillCostFit {
  /** Steps with fewer prefill tokens say more about the step's overhead than about prefill. */
  private static final int MIN_TOKENS = 16;
  private final double[] tokens = new double[32];
  private final double[] context = new double[32];
  private final double[] seconds = new double[32];
  private int samples;
  private volatile PrefillCost cost = PrefillCost.UNKNOWN;

  public PrefillCost cost() {
    return cost;
  }

  /**
   * One step: {@code prefillTokens} of its {@code totalTokens} were prompt tokens, attending to
   * {@code prefillContext} earlier tokens in all, and it took {@code stepSeconds}. Counted only
   * when the step was at least 90% prefill.
   */
  public void step(int prefillTokens, int totalTokens, double prefillContext, double stepSeconds) {
    if (prefillTokens < MIN_TOKENS || prefillTokens < 0.9 * totalTokens) {
      return;
    }
    int k = samples++ % tokens.length;
    tokens[k] = prefillTokens;
    context[k] = prefillContext;
    seconds[k] = stepSeconds;
    cost = PrefillCost.fit(tokens, context, seconds, Math.min(samples, tokens.length));
  }

  /** Forgets every sample (the first warm-up round ran before the JIT compiled the kernels). */
  public void reset() {
    samples = 0;
    cost = PrefillCost.UNKNOWN;
  }
}
