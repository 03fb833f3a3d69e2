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
    if (c.prefixes() > 0) {
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
        prompts.add(randomIds(random, c.inputTokens()));
      }
    }
    return prompts;
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
