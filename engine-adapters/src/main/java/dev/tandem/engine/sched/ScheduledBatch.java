package dev.tandem.engine.sched;

import java.util.List;

/**
 * One step's work: each scheduled sequence runs {@code tokens[i]} more tokens through the model,
 * starting at its {@link Sequence#computedTokens()}. A sequence whose run reaches its length draws
 * its next token ({@link #drawsToken(int)}).
 */
public record ScheduledBatch(List<Sequence> sequences, int[] tokens) {

  public int size() {
    return sequences.size();
  }

  public Sequence sequence(int i) {
    return sequences.get(i);
  }

  /** Total tokens run this step. */
  public long totalTokens() {
    long n = 0;
    for (int t : tokens) {
      n += t;
    }
    return n;
  }

  /** True if entry {@code i} catches its sequence up, so the step yields its next token. */
  public boolean drawsToken(int i) {
    Sequence seq = sequences.get(i);
    return seq.computedTokens() + tokens[i] >= seq.length();
  }
}
