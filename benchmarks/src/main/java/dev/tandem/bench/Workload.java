package dev.tandem.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/** The prompts of a run, as token ids, made from a seed. */
final class Workload {
  private static final int LOW_ID = 1_000;
  private static final int HIGH_ID = 100_000;

  private Workload() {}

  static List<int[]> prompts(BenchConfig c) {
    Random random = new Random(c.seed());
    List<int[]> prompts = new ArrayList<>();
    if (c.turns() > 0) {
      int[][] conversation = new int[c.prefixes()][];
      for (int turn = 0; turn < c.turns(); turn++) {
        for (int k = 0; k < c.prefixes(); k++) {
          int[] next = turn == 0 ? randomIds(random, c.prefixTokens()) : concat(conversation[k], randomIds(random, c.inputTokens()));
          conversation[k] = next;
          prompts.add(next);
        }
      }
    } else if (c.prefixes() > 0) {
      for (int p = 0; p < c.prefixes(); p++) {
        int[] prefix = randomIds(random, c.prefixTokens());
        for (int r = 0; r < c.prefixRepeats(); r++) {
          int[] prompt = new int[c.inputTokens()];
          System.arraycopy(prefix, 0, prompt, 0, prefix.length);
          int[] suffix = randomIds(random, c.inputTokens() - prefix.length);
          System.arraycopy(suffix, 0, prompt, prefix.length, suffix.length);
          prompts.add(prompt);
        }
      }
      Collections.shuffle(prompts, random);
    } else {
      for (int i = 0; i < c.numRequests(); i++) {
        boolean isLong = c.longShare() > 0 && random.nextDouble() < c.longShare();
        prompts.add(randomIds(random, isLong ? c.longTokens() : c.inputTokens()));
      }
    }
    return prompts;
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /**
   * The prompt tokens a cache could have served at best: for each prompt, its full blocks already
   * seen (as a prefix) in an earlier prompt, with unlimited KV and one worker.
   */
  static long maxCachedTokens(List<int[]> prompts, int blockSize) {
    java.util.Set<Long> seen = new java.util.HashSet<>();
    long cached = 0;
    for (int[] p : prompts) {
      long[] hashes = dev.tandem.common.BlockHasher.sequenceHashes(p, blockSize);
      int hit = 0;
      while (hit < hashes.length && seen.contains(hashes[hit])) {
        hit++;
      }
      // The last token is always computed, as workers do.
      cached += Math.min((long) hit * blockSize, p.length - 1);
      for (long h : hashes) {
        seen.add(h);
      }
    }
    return cached;
  }

  private static int[] randomIds(Random random, int n) {
    int[] ids = new int[n];
    for (int i = 0; i < n; i++) {
      ids[i] = LOW_ID + random.nextInt(HIGH_ID - LOW_ID);
    }
    return ids;
  }

  /** Words for chat prompts: common English words, about one token each in BPE vocabularies. */
  private static final String[] WORDS = (
      "time year people way day man thing woman life child world school state family student group country "
          + "problem hand part place case week company system program question work government number night "
          + "point home water room mother area money story fact month lot right study book eye job word business")
      .split(" ");

  static String words(int[] ids) {
    StringBuilder sb = new StringBuilder();
    for (int id : ids) {
      if (!sb.isEmpty()) {
        sb.append(' ');
      }
      sb.append(WORDS[id % WORDS.length]);
    }
    return sb.toString();
  }
}
