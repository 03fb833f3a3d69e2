package dev.tandem.router;

import dev.tandem.common.PrefillCost;
import dev.tandem.common.WorkerId;

/**
 * One candidate worker as a selector sees it: what the router itself has in flight there (requests,
 * prefill blocks not yet past their first token, decode blocks of unfinished requests), what the
 * worker last reported, and how fast it is ({@link Speed}).
 */
public record WorkerLoad(
    WorkerId workerId,
    int routedActiveRequests,
    int routedPrefillBlocks,
    int routedDecodeBlocks,
    int reportedActiveRequests,
    int reportedWaitingRequests,
    int kvBlocksUsed,
    int kvBlocksTotal,
    Speed speed) {

  /**
   * What predicts a worker's time to first token: its measured prefill cost ({@link
   * PrefillCost#UNKNOWN} until measured), the prompt tokens it reported queued, its batching
   * limits (0: not reported), and its recent steps' mean duration (0: none yet).
   */
  public record Speed(
      PrefillCost prefillCost, long reportedQueuedPrefillTokens, int maxNumSeqs, int maxBatchedTokens, double stepSeconds) {
    public static final Speed UNKNOWN = new Speed(PrefillCost.UNKNOWN, 0, 0, 0, 0);
  }

  /** Prompt tokens ahead of a new request there: what the worker reported queued or what the router sent, whichever is more. */
  public long queuedPrefillTokens(int blockSize) {
    return Math.max(speed.reportedQueuedPrefillTokens(), (long) routedPrefillBlocks * blockSize);
  }

  /** Requests there: the router's own count or the worker's report, whichever is more. */
  public int activeRequests() {
    return Math.max(routedActiveRequests, reportedActiveRequests);
  }

  /** A load without speed figures (block-cost selection, tests). */
  public WorkerLoad(
      WorkerId workerId,
      int routedActiveRequests,
      int routedPrefillBlocks,
      int routedDecodeBlocks,
      int reportedActiveRequests,
      int reportedWaitingRequests,
      int kvBlocksUsed,
      int kvBlocksTotal) {
    this(workerId, routedActiveRequests, routedPrefillBlocks, routedDecodeBlocks, reportedActiveRequests,
        reportedWaitingRequests, kvBlocksUsed, kvBlocksTotal, Speed.UNKNOWN);
  }
}
