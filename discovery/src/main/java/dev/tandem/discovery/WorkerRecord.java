package dev.tandem.discovery;

import dev.tandem.common.WorkerRole;
import java.util.Objects;

/**
 * What discovery knows of one worker: its id, role and gRPC address, and what it says of itself
 * (model, KV block size and capacity, host). Routers still Describe the worker before admitting it;
 * the record only tells them where to look. Fields a backend cannot know are {@code null} (role,
 * model, host) or 0 (block size, KV blocks): a static address list knows only addresses.
 *
 * @param workerId unique within the registry; the key a worker is registered under
 * @param role what the worker does, or {@code null} if the backend cannot tell
 * @param grpcAddress host:port of the worker API
 * @param transferAddress host:port of its KV transfer agent, or {@code null}
 * @param model the served model's name, or {@code null}
 * @param blockSize KV block size in tokens, or 0 if unknown
 * @param kvBlocks KV capacity in blocks, or 0 if unknown
 * @param host the machine (node or host name), or {@code null}
 */
public record WorkerRecord(
    String workerId,
    WorkerRole role,
    String grpcAddress,
    String transferAddress,
    String model,
    int blockSize,
    int kvBlocks,
    String host) {
  public WorkerRecord {
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(grpcAddress, "grpcAddress");
    if (workerId.isBlank() || workerId.contains("/")) {
      throw new IllegalArgumentException("worker id '" + workerId + "' must be non-blank and contain no '/'");
    }
  }

  /** A worker known only by its address (static discovery); its id is the address. */
  public static WorkerRecord atAddress(String grpcAddress) {
    return new WorkerRecord(grpcAddress, null, grpcAddress, null, null, 0, 0, null);
  }
}
