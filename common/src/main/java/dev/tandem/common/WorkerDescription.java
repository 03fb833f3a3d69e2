package dev.tandem.common;

import java.util.List;

/**
 * A worker as it describes itself when it joins: id and role, the model and its KV geometry,
 * the engine and the request features it honours, its KV transfer agent (empty backend and
 * address when it has none, null probe region then), the host and CPU set it runs on, and its
 * batching limits (requests and tokens per engine step; 0 when the worker did not say).
 */
public record WorkerDescription(
    WorkerId workerId,
    WorkerRole role,
    int blockSize,
    String modelName,
    int maxContextLength,
    int vocabSize,
    long kvBytesPerToken,
    int totalKvBlocks,
    String engine,
    List<String> supportedFeatures,
    int[] eosTokenIds,
    String kvTransferBackend,
    String kvTransferAddress,
    KvRegionRef probeRegion,
    String host,
    String cpus,
    int numLayers,
    int maxNumSeqs,
    int maxBatchedTokens) {
  public WorkerDescription {
    supportedFeatures = List.copyOf(supportedFeatures);
    eosTokenIds = eosTokenIds.clone();
  }

  /** True if the worker has a KV transfer agent. */
  public boolean movesKv() {
    return kvTransferAddress != null && !kvTransferAddress.isEmpty();
  }
}
