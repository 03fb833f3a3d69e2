package dev.tandem.engine.builtin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.tandem.common.SamplingParams;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SamplerTest {
  /** One per test, so that a test's cuts after its first start from the buckets the first left. */
  private final Sampler sampler = new Sampler();

  @Test
  void probabilitiesAreTheSoftmaxNumeratorsScaledToTheLikeliestWithMinPZeroingTheRest() {
    SplittableRandom r = new SplittableRandom(3);
    for (int length : new int[] {1, 7, 8, 17, 1_000, 151_936}) {
      float[] logits = new float[length];
      for (int i = 0; i < length; i++) {
        logits[i] = i % 97 == 5 ? Float.NEGATIVE_INFINITY : (float) Math.max(-25, Math.min(25, r.nextGaussian() * 4));
      }
      logits[length / 2] = 30f; // the likeliest (the others are within ±25)
      for (float temperature : new float[] {0.6f, 1f, 1.7f}) {
        for (float minP : new float[] {0f, 0.01f}) {
          float[] p = logits.clone();
          Sampler.unnormalisedProbabilities(p, temperature, minP);
          assertEquals(1f, p[length / 2]);
          float inv = 1f / temperature;
          for (int i = 0; i < length; i++) {
            float scalar = (float) Math.exp(logits[i] * inv - 30f * inv); // as computed one token at a time
            if (scalar < minP * (1 - 1e-6)) {
              assertEquals(0f, p[i], "token " + i + " is under min-p");
            } else if (scalar > minP * (1 + 1e-6)) {
              assertEquals(scalar, p[i], 2 * Math.ulp(scalar), "token " + i + " of " + length);
            }
          }
        }
      }
    }
  }

  @Test
  void repetitionPenaltyFallsOnceOnEachTokenSeenInThePromptOrTheOutput() {
    SamplingParams p = new SamplingParams(0f, SamplingParams.NO_TOP_P, SamplingParams.NO_TOP_K, 0f, java.util.OptionalLong.empty(), 0f, 0f, 2f,
        SamplingParams.NO_LOGPROBS);
    Sampler.State state = new Sampler.State(p, new int[] {1, 2, 2});
    state.accept(2);
    state.accept(3);
    float[] logits = {1.5f, 2f, -2f, 4f, 1f};
    assertEquals(3, sampler.sample(logits, p, state)); // greedy over the penalised logits
    assertArrayEquals(new float[] {1.5f, 1f, -4f, 2f, 1f}, logits); // 2 is in both, divided (multiplied) once
  }

  @Test
  void topKKeepsTheKLargestWithTiesToTheLowerId() {
    float[] p = {0.1f, 0.5f, 0.2f, 0.2f};
    sampler.keepTopKTopP(p, 2, 1f);
    assertArrayEquals(new float[] {0f, 0.5f, 0.2f, 0f}, p);
  }

  @Test
  void topPKeepsTheSmallestPrefixReachingItsShareOfTheMass() {
    float[] p = {0.1f, 0.5f, 0.2f, 0.2f};
    sampler.keepTopKTopP(p, 4, 0.6f); // 0.5 < 0.6, 0.5 + 0.2 ≥ 0.6
    assertArrayEquals(new float[] {0f, 0.5f, 0.2f, 0f}, p);
    float[] q = {0.1f, 0.5f, 0.2f, 0.2f};
    sampler.keepTopKTopP(q, 2, 0.7f); // of the top two's 0.7, the first alone reaches 70%
    assertArrayEquals(new float[] {0f, 0.5f, 0f, 0f}, q);
  }

  @Test
  void aTailBelowTheCutoffsIsReachedWhenTheMassOrKNeedsIt() {
    // One likely token and 100,000 at 1e-6 of it: 9% of the mass sits 6 orders of magnitude down.
    float[] p = new float[100_001];
    Arrays.fill(p, 1e-6f);
    p[500] = 1f;
    float[] expected = p.clone();
    fullSort(expected, p.length, 0.95f);
    sampler.keepTopKTopP(p, p.length, 0.95f);
    assertArrayEquals(expected, p);
    float[] q = new float[100_001];
    Arrays.fill(q, 1e-12f);
    q[7] = 1f;
    float[] expectedQ = q.clone();
    fullSort(expectedQ, 5_000, 1f);
    sampler.keepTopKTopP(q, 5_000, 1f);
    assertArrayEquals(expectedQ, q);
  }

  /** Against the whole vocabulary sorted, over random distributions: flat, peaked, tied, with zeros (min-p). */
  @Test
  void keepsWhatSortingEveryTokenKeeps() {
    SplittableRandom r = new SplittableRandom(42);
    for (int c = 0; c < 600; c++) {
      int v = 1 + r.nextInt(c % 10 == 0 ? 60_000 : 3_000);
      double scale = new double[] {0.01, 1, 3, 10, 40}[r.nextInt(5)];
      boolean tied = r.nextInt(4) == 0;
      float[] logits = new float[v];
      float max = Float.NEGATIVE_INFINITY;
      for (int i = 0; i < v; i++) {
        logits[i] = tied ? r.nextInt(6) : (float) (r.nextGaussian() * scale);
        max = Math.max(max, logits[i]);
      }
      double minP = r.nextInt(3) == 0 ? r.nextDouble() * 0.1 : 0;
      float[] p = new float[v];
      for (int i = 0; i < v; i++) {
        float e = (float) Math.exp(logits[i] - max);
        p[i] = e < minP ? 0f : e;
      }
      int k = r.nextInt(3) == 0 ? 1 + r.nextInt(50) : v;
      float topP = r.nextInt(4) == 0 ? 1f : (float) (0.05 + r.nextDouble() * 0.95);
      float[] expected = p.clone();
      fullSort(expected, k, topP);
      sampler.keepTopKTopP(p, k, topP);
      assertArrayEquals(expected, p, "case " + c + ": " + v + " tokens, scale " + scale + ", k " + k + ", top-p " + topP);
    }
  }

  /** Against the softmax in doubles and the top chosen by one scan each, over random logits: ties, −∞, odd lengths. */
  @Test
  void logprobsMatchThePlainComputation() {
    SplittableRandom r = new SplittableRandom(11);
    for (int c = 0; c < 400; c++) {
      int v = 1 + r.nextInt(c % 100 == 0 ? 151_936 : 2_000);
      float[] logits = new float[v];
      boolean tied = r.nextInt(3) == 0;
      for (int i = 0; i < v; i++) {
        logits[i] = r.nextInt(50) == 0 ? Float.NEGATIVE_INFINITY : tied ? r.nextInt(4) : (float) (r.nextGaussian() * 5);
      }
      int token = r.nextInt(v);
      int top = r.nextInt(21);
      var got = Sampler.logprobs(logits, token, top);
      // plainly
      double max = Double.NEGATIVE_INFINITY;
      for (float x : logits) {
        max = Math.max(max, x);
      }
      double sum = 0;
      for (float x : logits) {
        sum += Math.exp(x - max);
      }
      double logZ = max + Math.log(sum);
      String what = "case " + c + ": " + v + " tokens, top " + top;
      assertEquals(logits[token] - logZ, got.logprob(), 1e-4, what);
      int rank = 1;
      for (float x : logits) {
        rank += x > logits[token] ? 1 : 0;
      }
      assertEquals(rank, got.rank(), what);
      boolean[] taken = new boolean[v];
      int[] ids = new int[Math.min(top, v)];
      for (int k = 0; k < ids.length; k++) {
        int best = -1;
        for (int i = 0; i < v; i++) {
          if (!taken[i] && (best < 0 || logits[i] > logits[best])) {
            best = i;
          }
        }
        taken[best] = true;
        ids[k] = best;
        assertEquals(logits[best] - logZ, got.topLogprobs()[k], 1e-4, what);
      }
      assertArrayEquals(ids, got.topTokenIds(), what);
    }
  }

  /** The rule written plainly: every positive token sorted (largest first, ties by id), then the cuts. */
  private static void fullSort(float[] probs, int k, float topP) {
    // Largest first, ties by id: a positive float's bits order like it, so sort (complemented bits, id).
    int[] ids = java.util.stream.IntStream.range(0, probs.length).filter(i -> probs[i] > 0)
        .mapToLong(i -> ((long) ~Float.floatToRawIntBits(probs[i]) << 32) | i).sorted().mapToInt(t -> (int) t).toArray();
    int keep = Math.min(k, ids.length);
    if (topP < 1f) {
      double total = 0;
      for (int j = 0; j < keep; j++) {
        total += probs[ids[j]];
      }
      double cum = 0;
      int j = 0;
      while (j < keep) {
        cum += probs[ids[j++]];
        if (cum >= topP * total) {
          break;
        }
      }
      keep = j;
    }
    for (int j = keep; j < ids.length; j++) {
      probs[ids[j]] = 0f;
    }
  }
}
