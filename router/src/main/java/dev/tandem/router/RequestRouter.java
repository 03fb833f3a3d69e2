package dev.tandem.router;

import dev.tandem.common.GenerationRequest;
import java.time.Duration;
import java.util.List;

/**
 * The router as its callers (the frontend) see it: records in, records out, no transport types.
 * Selection and reservation are one atomic step.
 *
 * <p>Thread-safe.
 */
public interface RequestRouter {
  /**
   * Picks a worker ({@code pinnedWorker}, when not null, must be reachable) and reserves the load.
   *
   * @throws NoWorkerAvailableException if no worker can take the request
   * @throws IllegalArgumentException if the pinned worker is not reachable
   */
  Route route(GenerationRequest request, String pinnedWorker);

  /** The KV block size every worker shares. */
  int blockSize();

  /** The selection policy's name ({@code kv}, {@code round-robin}, {@code random}). */
  String mode();

  /** Every registered worker, reachable or not. */
  List<WorkerStatus> workers();

  /** Workers that registered but were refused (another model or block size), by address, with why. */
  default java.util.Map<String, String> refusedWorkers() {
    return java.util.Map.of();
  }

  /** Where workers are found ({@code static}, etcd's endpoints, Kubernetes Services). */
  default String discovery() {
    return "static";
  }

  /** The LoRA adapters requests may name as their model now (they load and unload at runtime), in the order first loaded. */
  default List<String> loraAdapters() {
    return List.of();
  }

  /**
   * Loads the LoRA adapter at {@code path} (on the workers' file system) as {@code name} on every
   * worker, or on none.
   *
   * @return the workers that loaded it
   * @throws IllegalArgumentException if it is loaded already, or a worker refused it (the message says why)
   * @throws NoWorkerAvailableException if no worker is reachable or one did not answer
   */
  default List<dev.tandem.common.WorkerId> loadLoraAdapter(String name, String path) {
    throw new IllegalArgumentException("this router loads no LoRA adapters");
  }

  /**
   * Unloads LoRA adapter {@code name} from every worker that has it; requests running with it finish.
   *
   * @return the workers that unloaded it
   * @throws java.util.NoSuchElementException if no worker has it
   */
  default List<dev.tandem.common.WorkerId> unloadLoraAdapter(String name) {
    throw new java.util.NoSuchElementException("LoRA adapter '" + name + "' is not loaded");
  }

  /** How long a worker sent prompts may stay silent before it is reported; null unless in kv mode with events. */
  Duration missingEventsWindow();
}
