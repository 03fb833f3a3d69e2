package dev.tandem.engine.sched;

/**
 * How a {@link Scheduler} batches: at most {@code maxNumSeqs} running sequences and {@code
 * maxBatchedTokens} tokens per step; long prompts are split across steps when {@code
 * chunkedPrefill} is on, refused when they exceed the budget otherwise. {@code maxContextLength}
 * bounds prompt plus generated tokens; {@code eosTokenIds} end a request unless it ignores EOS.
 */
public record SchedulerConfig(
    int maxNumSeqs,
    int maxBatchedTokens,
    boolean chunkedPrefill,
    int maxContextLength,
    int[] eosTokenIds) {

  public SchedulerConfig {
    if (maxNumSeqs <= 0 || maxBatchedTokens <= 0 || maxContextLength <= 0) {
      throw new IllegalArgumentException(
          "max_num_seqs, max_batched_tokens and the context length must be positive");
    }
    eosTokenIds = eosTokenIds.clone();
  }
}
