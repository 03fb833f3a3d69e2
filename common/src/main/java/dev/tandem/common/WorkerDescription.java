package dev.tandem.common;

import java.util.List;

/**
 * A worker as it describes itself when it joins: id and role, the model and its KV geometry,
 * the engine and the request features it honours, its KV transfer agent (empty backend and
 * address when it has none, null probe region then), and the host and CPU set it runs on.
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
    int numLayers) {
  public WorkerDescription {
    supportedFeatures = List.copyOf(supportedFeatures);
    eosTokenIds = eosTokenIds.clone();
  }

  /** True if the worker has a KV transfer agent. */
  public boolean movesKv() {
    return kvTransferAddress != null && !kvTransferAddress.isEmpty();
  }
}
