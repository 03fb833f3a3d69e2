package dev.tandem.common;

import java.util.List;

/**
 * A worker as it describes itself when it joins: id and role, the model and its KV geometry (bytes
 * per token, the cache's element type, "f32" / "bf16" / "f16", "" for an engine with no real KV, and
 * how its keys were rotated, {@code kvKeyRotation}: "longrope-long" / "longrope-short" for a LongRoPE
 * model, "" for the one rotation of any other),
 * the engine and the request features it honours, its KV transfer agent (empty backend and
 * address when it has none, null probe region then), the host and CPU set it runs on (and the
 * accelerator it computes on, {@code computeDevice}: a GPU's UUID, unique across hosts; empty on
 * CPUs; and {@code weightQuantization}, "q8_0" or "q4_0" where it quantized its weights at load, else ""), its
 * batching limits (requests and tokens per engine step; 0 when the worker did not say), and every
 * transfer agent it runs over its KV ({@code kvTransferEndpoints}, the primary first; empty for
 * none), and the LoRA adapters it applies on request ({@code loraAdapters}, by name; empty for none).
 */
public record WorkerDescription(
    WorkerId workerId,
    WorkerRole role,
    int blockSize,
    String modelName,
    int maxContextLength,
    int vocabSize,
    long kvBytesPerToken,
    String kvCacheDtype,
    String kvKeyRotation,
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
    int maxBatchedTokens,
    List<TransferEndpoint> kvTransferEndpoints,
    String computeDevice,
    String weightQuantization,
    List<String> loraAdapters) {
  /** One transfer agent: its backend, the address peers reach it at, its probe region. */
  public record TransferEndpoint(String backend, String address, KvRegionRef probeRegion) {}

  public WorkerDescription {
    supportedFeatures = List.copyOf(supportedFeatures);
    computeDevice = computeDevice == null ? "" : computeDevice;
    weightQuantization = weightQuantization == null ? "" : weightQuantization;
    loraAdapters = loraAdapters == null ? List.of() : List.copyOf(loraAdapters);
    kvKeyRotation = kvKeyRotation == null ? "" : kvKeyRotation;
    eosTokenIds = eosTokenIds.clone();
    if (kvTransferEndpoints == null || kvTransferEndpoints.isEmpty()) {
      // A worker that names only its primary agent (older workers): that one.
      kvTransferEndpoints = kvTransferAddress == null || kvTransferAddress.isEmpty()
          ? List.of()
          : List.of(new TransferEndpoint(kvTransferBackend, kvTransferAddress, probeRegion));
    } else {
      kvTransferEndpoints = List.copyOf(kvTransferEndpoints);
    }
  }

  /** The backends of its transfer agents, the primary first. */
  public List<String> kvTransferBackends() {
    return kvTransferEndpoints.stream().map(TransferEndpoint::backend).toList();
  }

  /** The agent this worker runs for {@code backend}, or null. */
  public TransferEndpoint endpoint(String backend) {
    for (TransferEndpoint e : kvTransferEndpoints) {
      if (e.backend().equals(backend)) {
        return e;
      }
    }
    return null;
  }

  /** Whether this worker runs requests with LoRA adapter {@code loraName} (null: the base model, which every worker runs). */
  public boolean serves(String loraName) {
    return loraName == null || loraAdapters.contains(loraName);
  }

  /** True if the worker has a KV transfer agent. */
  public boolean movesKv() {
    return kvTransferAddress != null && !kvTransferAddress.isEmpty();
  }
}
