package dev.tandem.common;

/**
 * A worker's load as it reports it: requests running and waiting, prompt tokens queued for
 * prefill, KV blocks used of the total, its last KV event id, its measured prefill cost, how
 * often it fell back to a local prefill, its recent steps' mean duration (0 before any), and whether
 * it is draining (finishing what it has, taking nothing new), and the LoRA adapters it takes
 * requests for now (they change at runtime; empty: none).
 */
public record WorkerLoadReport(
    WorkerId workerId,
    int activeRequests,
    int waitingRequests,
    long queuedPrefillTokens,
    int kvBlocksUsed,
    int kvBlocksTotal,
    long lastEventId,
    PrefillCost prefillCost,
    long remotePrefillFallbacks,
    double stepSeconds,
    boolean draining,
    double stepRunningSeconds,
    java.util.List<String> loraAdapters) {

  public WorkerLoadReport {
    loraAdapters = loraAdapters == null ? java.util.List.of() : java.util.List.copyOf(loraAdapters);
  }

  /** Nothing reported yet. */
  public static WorkerLoadReport empty(WorkerId workerId) {
    return new WorkerLoadReport(workerId, 0, 0, 0, 0, 0, 0, PrefillCost.UNKNOWN, 0, 0, false, 0, java.util.List.of());
  }

  /** Prompt tokens per second for a 512-token prompt, as dashboards show it. */
  public double prefillTokensPerSecond() {
    return prefillCost.tokensPerSecond(512);
  }
}
