package dev.tandem.engine;

import dev.tandem.common.KvEvent;
import dev.tandem.common.PrefillCost;
import java.util.List;

/**
 * The engine SPI that workers drive: requests go in, each {@link #step()} advances every scheduled
 * sequence by one iteration of continuous batching and returns what it produced.
 *
 * <p>Threading: an engine is owned by one thread (the worker's engine loop). No method is
 * thread-safe; callers marshal requests, aborts and snapshots onto that thread. KV events reach the
 * sink on that thread too, in event-id order.
 */
public interface Engine extends AutoCloseable {
  /** What this engine serves and how its KV cache is laid out. */
  EngineInfo info();

  /**
   * The accelerator this engine computes on, named uniquely across hosts (a GPU's UUID, {@code
   * GPU-…}); empty on CPUs. Two workers on the same one share it: splitting a request between them
   * gains nothing.
   */
  default String computeDevice() {
    return "";
  }

  /** "q8_0" or "q4_0" where the engine quantized its weights at load ({@code --quantization}); empty otherwise. */
  default String weightQuantization() {
    return "";
  }

  /**
   * The LoRA adapters this engine applies when a request names one ({@link EngineRequest#loraName}),
   * in the order they were loaded; empty where it loaded none. A request naming another is refused.
   * Unlike the rest of this interface, callable from any thread.
   */
  default List<String> loraAdapters() {
    return List.of();
  }

  /**
   * Loads the LoRA adapter in {@code dir} (PEFT's files) under {@code name}: requests added after
   * this returns may name it. Unlike the rest of this interface, callable from any thread: it reads
   * the files on the caller's thread, so the engine keeps stepping meanwhile.
   *
   * @throws IllegalArgumentException naming the file and field when the adapter cannot be applied
   *     to this model, or the name is taken
   * @throws UnsupportedOperationException where this engine applies no adapters
   */
  default void loadLoraAdapter(String name, java.nio.file.Path dir) {
    throw new UnsupportedOperationException("the " + info().engineName() + " engine applies no LoRA adapters");
  }

  /**
   * Stops taking requests that name LoRA adapter {@code name}. The requests already running with it
   * finish with it; then its memory goes, and so do the KV blocks cached under it (a removed event
   * for each), so that an adapter loaded later under the same name never reuses them.
   *
   * @return how many requests still run with it (0: gone already)
   * @throws IllegalArgumentException if no adapter of that name is loaded
   */
  default int unloadLoraAdapter(String name) {
    throw new IllegalArgumentException("LoRA adapter '" + name + "' is not loaded (the " + info().engineName() + " engine applies none)");
  }

  /** Speculative decoding's totals so far ({@link SpeculationCounts#NONE} where it is off). */
  default SpeculationCounts speculationCounts() {
    return SpeculationCounts.NONE;
  }

  /** How long this engine takes to prefill, as measured so far ({@link PrefillCost#UNKNOWN} before). */
  default PrefillCost prefillCost() {
    return PrefillCost.UNKNOWN;
  }

  /** Receives every KV event from now on; replaces any earlier sink. */
  void setEventSink(KvEventSink sink);

  /**
   * Queues a request.
   *
   * @throws IllegalArgumentException if the request can never be served (too long for the context
   *     window or for the whole KV pool); nothing is allocated then
   */
  void add(EngineRequest request);

  /**
   * Aborts a request wherever it is; its KV blocks return to the pool.
   *
   * @return false if no such request is queued or running
   */
  boolean abort(String requestId);

  /** True while any request is queued or running. */
  boolean hasWork();

  /** Runs one iteration; returns one output per request that produced tokens or finished. */
  List<RequestOutput> step();

  /** Current load and KV usage. */
  EngineLoad load();

  /**
   * The whole prefix cache as events: a {@link KvEvent.Cleared} followed by stored events that
   * rebuild it, all carrying the id of the last event emitted so far.
   */
  List<KvEvent> cacheSnapshot();

  @Override
  default void close() {}
}
