package dev.tandem.engine.builtin;

import dev.tandem.common.TokenLogprob;
import dev.tandem.common.SamplingParams;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Picks a token from logits the way vLLM does: allowed token ids, logit bias, repetition penalty (prompt and output tokens),
 * frequency and presence penalties (output tokens), then greedy argmax, or temperature → min-p →
 * top-k → top-p and a draw from the sequence's own generator (seeded: reproducible).
 *
 * <p>A draw's random numbers come from the seed and the output position it is drawn for, not from
 * a stream that runs through the output: a seeded stream that moves to another worker mid-way
 * (migration, or decode after a prefill worker drew its first token) draws the rest exactly as if
 * it had stayed.
 *
 * <p>Threading: one per engine, used on the engine thread.
 */
final class Sampler {
  /**
   * A sequence's sampling state: its seed and how many output tokens it accepted (which together
   * give each draw's random numbers), how often it produced each token, its output's grammar
   * (null when unconstrained) with the tokens that end it, and its reasoning's budget (null
   * without one).
   */
  static final class State {
    dev.tandem.engine.grammar.GrammarState grammar;
    int[] endTokens;
    ThinkingBudgetTracker thinking; // null without a thinking budget
    TokenLogprob[] promptLogprobs; // [i]: prompt token i + 1 given tokens 0..i; null when not asked
    boolean promptLogprobsSent;
    private final long seed;
    /** Output tokens accepted so far, a migrated stream's earlier ones included: the next draw's position. */
    private int position;
    private final it.unimi.dsi.fastutil.ints.Int2IntOpenHashMap outputCounts =
        new it.unimi.dsi.fastutil.ints.Int2IntOpenHashMap();
    private final it.unimi.dsi.fastutil.ints.IntOpenHashSet promptTokens =
        new it.unimi.dsi.fastutil.ints.IntOpenHashSet();

    State(SamplingParams params, int[] prompt) {
      this.seed = params.seed().orElseGet(() -> ThreadLocalRandom.current().nextLong());
      if (params.repetitionPenalty() != 1f) {
        for (int t : prompt) {
          promptTokens.add(t);
        }
      }
    }

    void accept(int token) {
      outputCounts.addTo(token, 1);
      position++;
    }

    /** The random numbers of the draw at the current output position (up to two are used). */
    SplittableRandom draw() {
      return new SplittableRandom(mix(seed ^ mix(position + 0x9E3779B97F4A7C15L)));
    }

    /** SplitMix64's finaliser. */
    private static long mix(long z) {
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      return z ^ (z >>> 31);
    }
  }

  int sample(float[] logits, SamplingParams p, State state) {
    return sample(logits, p, state, -1);
  }

  /**
   * As {@link #sample(float[], SamplingParams, State)}, where {@code draft} (≥ 0) is a token
   * proposed for this position by speculation: greedy draws ignore it (the caller keeps it if it is
   * the argmax); otherwise it is kept with its probability p(draft), and else a token is drawn from
   * the distribution without it, renormalised — speculative sampling's rule for a proposer that
   * puts all its mass on one token, so that what comes out is distributed exactly as without the
   * proposal (Leviathan et al., 2023; Chen et al., 2023).
   */
  int sample(float[] logits, SamplingParams p, State state, int draft) {
    applyPenalties(logits, p, state);
    if (p.isGreedy()) {
      return argmax(logits);
    }
    float inv = 1f / p.temperature();
    float max = Float.NEGATIVE_INFINITY;
    for (int i = 0; i < logits.length; i++) {
      logits[i] *= inv;
      max = Math.max(max, logits[i]);
    }
    // Unnormalised probabilities; min-p keeps tokens with p ≥ min_p · p_max.
    float[] probs = logits; // reused in place
    double minP = p.minP() > 0 ? p.minP() : 0;
    for (int i = 0; i < probs.length; i++) {
      float e = (float) Math.exp(logits[i] - max);
      probs[i] = e < minP ? 0f : e; // p_max is exp(0) = 1 before normalisation
    }
    boolean topK = p.topK() > 0 && p.topK() < probs.length;
    boolean topP = p.topP() < 1f;
    if (topK || topP) {
      keepTopKTopP(probs, topK ? p.topK() : probs.length, topP ? p.topP() : 1f);
    }
    double total = 0;
    for (float v : probs) {
      total += v;
    }
    SplittableRandom random = state.draw();
    if (draft >= 0) {
      if (random.nextDouble() * total < probs[draft]) {
        return draft;
      }
      total -= probs[draft];
      probs[draft] = 0f;
      if (total <= 0) {
        return draft; // unreachable: the draw above keeps a token holding all the mass
      }
    }
    double r = random.nextDouble() * total;
    int last = 0;
    for (int i = 0; i < probs.length; i++) {
      if (probs[i] > 0) {
        last = i;
        r -= probs[i];
        if (r < 0) {
          return i;
        }
      }
    }
    return last;
  }

  /** vLLM's {@code allowed_token_ids}: every other token's logit to −∞ (ids outside the vocabulary are none). */
  private static void allowOnly(float[] logits, java.util.List<Integer> allowed) {
    float[] kept = new float[allowed.size()];
    for (int i = 0; i < kept.length; i++) {
      int t = allowed.get(i);
      kept[i] = t >= 0 && t < logits.length ? logits[t] : Float.NEGATIVE_INFINITY;
    }
    Arrays.fill(logits, Float.NEGATIVE_INFINITY);
    for (int i = 0; i < kept.length; i++) {
      int t = allowed.get(i);
      if (t >= 0 && t < logits.length) {
        logits[t] = kept[i];
      }
    }
  }

  private static void applyPenalties(float[] logits, SamplingParams p, State state) {
    if (p.restrictsTokens()) {
      allowOnly(logits, p.allowedTokenIds());
    }
    for (var e : p.logitBias().entrySet()) {
      int t = e.getKey();
      if (t >= 0 && t < logits.length) {
        logits[t] += e.getValue();
      }
    }
    if (p.repetitionPenalty() != 1f) {
      float rp = p.repetitionPenalty();
      var seen = new it.unimi.dsi.fastutil.ints.IntOpenHashSet(state.promptTokens);
      seen.addAll(state.outputCounts.keySet());
      for (int t : seen) {
        logits[t] = logits[t] > 0 ? logits[t] / rp : logits[t] * rp;
      }
    }
    if (p.frequencyPenalty() != 0f || p.presencePenalty() != 0f) {
      for (var e : state.outputCounts.int2IntEntrySet()) {
        logits[e.getIntKey()] -= p.frequencyPenalty() * e.getIntValue() + p.presencePenalty();
      }
    }
  }

  /**
   * Log-probabilities of {@code token} and the {@code top} most likely tokens under the softmax
   * of {@code logits} (the raw model output, as vLLM reports by default).
   */
  static dev.tandem.common.TokenLogprob logprobs(float[] logits, int token, int top) {
    float max = Float.NEGATIVE_INFINITY;
    for (float v : logits) {
      max = Math.max(max, v);
    }
    double sum = 0;
    for (float v : logits) {
      sum += Math.exp(v - max);
    }
    float logZ = (float) (max + Math.log(sum));
    int[] ids = new int[Math.min(top, logits.length)];
    float[] lps = new float[ids.length];
    // Selection of the top few by repeated scans (top ≤ 20).
    boolean[] taken = new boolean[ids.length == 0 ? 0 : logits.length];
    for (int k = 0; k < ids.length; k++) {
      int best = -1;
      for (int i = 0; i < logits.length; i++) {
        if (!taken[i] && (best < 0 || logits[i] > logits[best])) {
          best = i;
        }
      }
      taken[best] = true;
      ids[k] = best;
      lps[k] = logits[best] - logZ;
    }
    int rank = 1; // vLLM's: 1 + how many tokens are likelier
    for (float v : logits) {
      if (v > logits[token]) {
        rank++;
      }
    }
    return new dev.tandem.common.TokenLogprob(logits[token] - logZ, ids, lps, rank);
  }

  static int argmax(float[] logits) {
    int best = 0;
    for (int i = 1; i < logits.length; i++) {
      if (logits[i] > logits[best]) {
        best = i;
      }
    }
    return best;
  }

  /**
   * Zeroes every probability outside the k largest, then outside the smallest prefix (largest
   * first) whose mass reaches {@code topP} of the remaining total.
   */
  private static void keepTopKTopP(float[] probs, int k, float topP) {
    int n = 0;
    long[] packed = new long[probs.length];
    for (int i = 0; i < probs.length; i++) {
      if (probs[i] > 0) {
        // Non-negative floats order like their bits; descending order via the complement.
        packed[n++] = ((long) ~Float.floatToRawIntBits(probs[i]) << 32) | i;
      }
    }
    Arrays.sort(packed, 0, n);
    int keep = Math.min(k, n);
    if (topP < 1f) {
      double total = 0;
      for (int j = 0; j < keep; j++) {
        total += probs[(int) packed[j]];
      }
      double cum = 0;
      int j = 0;
      while (j < keep) {
        cum += probs[(int) packed[j++]];
        if (cum >= topP * total) {
          break;
        }
      }
      keep = j;
    }
    for (int j = keep; j < n; j++) {
      probs[(int) packed[j]] = 0f;
    }
  }
}
