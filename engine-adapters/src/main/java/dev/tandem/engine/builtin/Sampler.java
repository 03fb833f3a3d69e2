package dev.tandem.engine.builtin;

import dev.tandem.common.TokenLogprob;
import dev.tandem.common.SamplingParams;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadLocalRandom;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

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
    float[] probs = logits; // reused in place
    unnormalisedProbabilities(logits, p.temperature(), p.minP() > 0 ? p.minP() : 0f);
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
    for (int i = 0; i < probs.length; i++) {
      r -= probs[i]; // a zero leaves r as it is, so only a kept token ends the walk (no branch on which are kept)
      if (r < 0) {
        return i;
      }
    }
    int last = probs.length - 1; // rounding left r ≥ 0: the last kept token
    while (last > 0 && !(probs[last] > 0)) {
      last--;
    }
    return last;
  }

  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;

  /**
   * In place: logits ÷ temperature, then exp(logit − the largest), so the likeliest token's is 1;
   * min-p zeroes those under {@code minP} of it. Vectorised: at 152k ids the scalar exp alone took
   * 0.6 ms a token.
   */
  static void unnormalisedProbabilities(float[] logits, float temperature, float minP) {
    float inv = 1f / temperature;
    int bound = F.loopBound(logits.length);
    FloatVector top = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
    int i = 0;
    for (; i < bound; i += F.length()) {
      FloatVector v = FloatVector.fromArray(F, logits, i).mul(inv);
      v.intoArray(logits, i);
      top = top.max(v);
    }
    float max = top.reduceLanes(VectorOperators.MAX);
    for (; i < logits.length; i++) {
      logits[i] *= inv;
      max = Math.max(max, logits[i]);
    }
    for (i = 0; i < bound; i += F.length()) {
      FloatVector e = FloatVector.fromArray(F, logits, i).sub(max).lanewise(VectorOperators.EXP);
      e.blend(0f, e.lt(minP)).intoArray(logits, i);
    }
    for (; i < logits.length; i++) {
      float e = (float) Math.exp(logits[i] - max);
      logits[i] = e < minP ? 0f : e;
    }
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
      // Once per token seen in the prompt or the output (no set built per draw).
      state.promptTokens.forEach((int t) -> repeated(logits, t, rp));
      state.outputCounts.keySet().forEach((int t) -> {
        if (!state.promptTokens.contains(t)) {
          repeated(logits, t, rp);
        }
      });
    }
    if (p.frequencyPenalty() != 0f || p.presencePenalty() != 0f) {
      for (var e : state.outputCounts.int2IntEntrySet()) {
        logits[e.getIntKey()] -= p.frequencyPenalty() * e.getIntValue() + p.presencePenalty();
      }
    }
  }

  /** The repetition penalty on one token: a positive logit divided by it, a negative one multiplied. */
  private static void repeated(float[] logits, int t, float rp) {
    logits[t] = logits[t] > 0 ? logits[t] / rp : logits[t] * rp;
  }

  /**
   * Log-probabilities of {@code token} and the {@code top} most likely tokens under the softmax
   * of {@code logits} (the raw model output, as vLLM reports by default), and the token's rank
   * (vLLM's: 1 + how many tokens are likelier). Ties among the top go to the lower id.
   *
   * <p>Three vectorised passes (the largest, the softmax's sum, the rank) and one that compares a
   * whole vector with the smallest of the top so far: per prompt position for {@code
   * prompt_logprobs} and per token for {@code logprobs}, so at 152k ids a scalar {@code exp} per
   * token (0.6 ms) and a scan per alternative (20 scans for {@code top_logprobs: 20}) were the cost.
   */
  static dev.tandem.common.TokenLogprob logprobs(float[] logits, int token, int top) {
    int bound = F.loopBound(logits.length);
    FloatVector largest = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
    int i = 0;
    for (; i < bound; i += F.length()) {
      largest = largest.max(FloatVector.fromArray(F, logits, i));
    }
    float max = largest.reduceLanes(VectorOperators.MAX);
    for (; i < logits.length; i++) {
      max = Math.max(max, logits[i]);
    }
    double sum = 0;
    i = 0;
    while (i < bound) {
      // Float lanes for up to 1,024 terms at a time (each ≤ 1), then into the double sum.
      FloatVector part = FloatVector.zero(F);
      int end = Math.min(bound, i + 1024);
      for (; i < end; i += F.length()) {
        part = part.add(FloatVector.fromArray(F, logits, i).sub(max).lanewise(VectorOperators.EXP));
      }
      sum += part.reduceLanes(VectorOperators.ADD);
    }
    for (; i < logits.length; i++) {
      sum += Math.exp(logits[i] - max);
    }
    float logZ = (float) (max + Math.log(sum));
    int[] ids = new int[Math.min(top, logits.length)];
    float[] values = new float[ids.length];
    int held = 0;
    if (ids.length > 0) {
      // A vector is looked at token by token only when one of its logits beats the smallest held.
      for (i = 0; i < logits.length; i += F.length()) {
        float floor = held < ids.length ? Float.NEGATIVE_INFINITY : values[held - 1];
        if (held == ids.length && i + F.length() <= logits.length
            && !FloatVector.fromArray(F, logits, i).compare(VectorOperators.GT, floor).anyTrue()) {
          continue;
        }
        for (int j = i; j < Math.min(logits.length, i + F.length()); j++) {
          held = insert(ids, values, held, j, logits[j]);
        }
      }
    }
    float[] lps = new float[held];
    for (int k = 0; k < held; k++) {
      lps[k] = values[k] - logZ;
    }
    float mine = logits[token];
    int likelier = 0;
    for (i = 0; i < bound; i += F.length()) {
      likelier += FloatVector.fromArray(F, logits, i).compare(VectorOperators.GT, mine).trueCount();
    }
    for (; i < logits.length; i++) {
      likelier += logits[i] > mine ? 1 : 0;
    }
    return new dev.tandem.common.TokenLogprob(mine - logZ, Arrays.copyOf(ids, held), lps, 1 + likelier);
  }

  /**
   * Puts {@code id} with {@code value} into the top list ({@code held} of them, largest first)
   * if it belongs there: after every equal one (they came first, so have lower ids), dropping the
   * last when full. Returns how many are held.
   */
  private static int insert(int[] ids, float[] values, int held, int id, float value) {
    if (held == ids.length && !(value > values[held - 1])) {
      return held;
    }
    int at = held == ids.length ? held - 1 : held;
    while (at > 0 && value > values[at - 1]) {
      ids[at] = ids[at - 1];
      values[at] = values[at - 1];
      at--;
    }
    ids[at] = id;
    values[at] = value;
    return held == ids.length ? held : held + 1;
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

  /** Buckets of {@link #keepTopKTopP}: a positive float's exponent and its top 7 mantissa bits (1/128 of an octave each). */
  private static final int BUCKET_SHIFT = 16;
  private final int[] bucketCount = new int[1 << (31 - BUCKET_SHIFT)];
  private final double[] bucketMass = new double[1 << (31 - BUCKET_SHIFT)];
  /** The buckets the last cut filled (cleared by the next: the whole table is 384 KB). */
  private int filledFrom;
  private int filledTo = -1;

  /**
   * Zeroes every probability outside the k largest, then outside the smallest prefix (largest
   * first, ties by id) whose mass reaches {@code topP} of the remaining total.
   *
   * <p>Without sorting the vocabulary (1.7 ms a token at 152k ids): one pass counts the tokens and
   * their mass in buckets of 1/128 of an octave (positive floats order like their bits), the
   * buckets are walked from the top to the one where k tokens, or the top-p share of the mass, are
   * reached, and only that bucket's tokens are sorted to find where inside it the cut falls. Sums
   * run bucket by bucket, so a cut exactly on a rounding boundary may fall one token off the full
   * sort's.
   */
  void keepTopKTopP(float[] probs, int k, float topP) {
    int[] count = bucketCount;
    double[] mass = bucketMass;
    Arrays.fill(count, filledFrom, filledTo + 1, 0);
    Arrays.fill(mass, filledFrom, filledTo + 1, 0);
    int n = 0;
    int lowest = Integer.MAX_VALUE;
    int highest = -1;
    for (float v : probs) {
      if (v > 0) {
        int b = Float.floatToRawIntBits(v) >>> BUCKET_SHIFT;
        count[b]++;
        mass[b] += v;
        n++;
        lowest = Math.min(lowest, b);
        highest = Math.max(highest, b);
      }
    }
    filledFrom = n == 0 ? 0 : lowest;
    filledTo = highest;
    int keep = Math.min(k, n);
    if (n == 0 || (keep == n && topP >= 1f)) {
      return;
    }
    // The k-th token: its bucket, and the tokens kept inside it (largest first).
    int kBucket = -1;
    long[] kIn = null; // kBucket's tokens among the k largest
    double kInMass = 0;
    double total = 0; // the k largest's mass
    if (keep < n) {
      int above = 0;
      kBucket = highest;
      while (above + count[kBucket] < keep) {
        above += count[kBucket];
        total += mass[kBucket--];
      }
      kIn = Arrays.copyOf(sortedIn(probs, kBucket, count[kBucket]), keep - above);
      for (long t : kIn) {
        kInMass += probs[(int) t];
      }
      total += kInMass;
    } else {
      for (int b = highest; b >= lowest; b--) {
        total += mass[b];
      }
    }
    int cut = kIn == null ? -1 : (int) kIn[kIn.length - 1]; // the id of the last token kept, -1: none cut
    if (topP < 1f) {
      double target = topP * total;
      double cum = 0;
      for (int b = highest; b >= Math.max(lowest, kBucket); b--) {
        double inBucket = b == kBucket ? kInMass : mass[b];
        if (count[b] == 0 || cum + inBucket < target) {
          cum += inBucket;
          continue;
        }
        // The cut is in this bucket (at its last token when the token-by-token sum falls short of
        // the bucket's by rounding).
        for (long t : b == kBucket ? kIn : sortedIn(probs, b, count[b])) {
          cut = (int) t;
          cum += probs[(int) t];
          if (cum >= target) {
            break;
          }
        }
        break;
      }
    }
    if (cut < 0) {
      return;
    }
    // Kept: above the last kept token, or equal to it with an id not after it (the sort's order).
    // Vectorised: where about half the tokens are kept, a branch per token mispredicts half the time.
    float last = probs[cut];
    int bound = F.loopBound(probs.length);
    int i = 0;
    for (; i < bound; i += F.length()) {
      FloatVector v = FloatVector.fromArray(F, probs, i);
      v.blend(0f, v.lt(last)).intoArray(probs, i);
    }
    for (; i < probs.length; i++) {
      probs[i] = probs[i] < last ? 0f : probs[i];
    }
    for (i = cut + 1; i < probs.length; i++) {
      probs[i] = probs[i] == last ? 0f : probs[i]; // ties after the cut
    }
  }

  /** The {@code size} tokens of {@code bucket}, largest first, ties by id, each packed as (complemented bits, id): {@code (int) t} is the id. */
  private static long[] sortedIn(float[] probs, int bucket, int size) {
    long[] packed = new long[size];
    int n = 0;
    for (int i = 0; i < probs.length && n < size; i++) {
      float v = probs[i];
      if (v > 0 && Float.floatToRawIntBits(v) >>> BUCKET_SHIFT == bucket) {
        // Non-negative floats order like their bits; descending order via the complement.
        packed[n++] = ((long) ~Float.floatToRawIntBits(v) << 32) | i;
      }
    }
    Arrays.sort(packed);
    return packed;
  }
}
