package dev.tandem.engine;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;
import java.util.function.LongFunction;

/**
 * What an engine offers disaggregated serving: its KV cache memory as per-layer segments that a
 * transfer agent can register, keeping a prefilled request's blocks for a peer to read, and
 * admitting a request whose prompt KV another engine computed.
 *
 * <p>Layout: block {@code b} of layer {@code l} is {@code keys(l)} (and {@code values(l)}) from
 * byte {@code b × blockBytes()} for {@code blockBytes()} bytes. Both sides of a hand-off must serve
 * the same model with the same block size and KV cache dtype, so their layouts agree, and rotate
 * keys alike ({@link #keyRotation}).
 *
 * <p>Threading: like {@link Engine}, owned by the engine's thread; the segments themselves may be
 * read and written by transfer agents while the blocks they cover are held or being imported.
 */
public interface KvHandoff {
  int layers();

  /** Bytes of one block of one layer, for keys or values alone. */
  long blockBytes();

  /** The element type of the cache's entries: "f32", "bf16" or "f16". */
  String kvCacheDtype();

  /**
   * How this engine rotates keys where engines serving one model can differ: a LongRoPE model's
   * factor set, "longrope-long" or "longrope-short" (picked by the engine's context); "" where
   * there is no choice. Cached keys rotated otherwise are not this engine's to read.
   */
  default String keyRotation() {
    return "";
  }

  MemorySegment keys(int layer);

  MemorySegment values(int layer);

  /**
   * The KV cache's copy in GPU memory, where the engine keeps one (the cuda compute backend),
   * laid out as {@link #keys} and {@link #values}: segments that name device addresses, never to
   * be read or written from Java (a {@code cuda-ipc} transfer agent registers and reads them).
   * Valid until the engine closes; the host cache stays the one every block is in. Empty for an
   * engine on the CPU.
   */
  default Optional<DeviceKv> deviceKv() {
    return Optional.empty();
  }

  /** Per layer, the device segments of the keys and of the values. */
  record DeviceKv(List<MemorySegment> keys, List<MemorySegment> values) {}

  /**
   * Measures the copy an import's commit makes between the host cache and the GPU's copy, both
   * ways, over {@code bytes} of scratch memory (never the cache): into the device after a pull into
   * host memory ({@link #commitImport}), into the host cache after one into the device copy
   * ({@link #commitDeviceImport}). Empty for an engine without a device copy. Call on the engine's
   * thread, between steps.
   */
  default Optional<HostDeviceCopy> measureHostDeviceCopy(long bytes) {
    return Optional.empty();
  }

  /** Bytes per second of the commit's copy into the GPU's copy of the cache and into the host cache. */
  record HostDeviceCopy(double toDeviceBytesPerSecond, double toHostBytesPerSecond) {}

  /**
   * Moves the KV cache into memory from {@code allocate} (asked for each layer's keys, then its
   * values, with the bytes wanted), copying the blocks that hold data (cached prefixes, referenced
   * blocks; a free block's contents are not carried), and frees the old memory: so that a
   * transfer agent can hand out memory it reads fastest. The new memory must stay valid until the
   * engine closes; the engine does not free it. Call on the engine's thread, between steps.
   */
  void relocateKv(LongFunction<MemorySegment> allocate);

  /**
   * Calls {@code listener} during every step in which requests complete their prompt, once per
   * layer as soon as that layer's KV of those requests is written; replaces any earlier listener.
   */
  void setPromptLayerListener(PromptLayerListener listener);

  /** Keeps the request's blocks after it finishes, until {@link #releaseHeld} or an abort. */
  void holdKvOnFinish(String requestId);

  /** Frees a finished request's held blocks; false if none are held under that id. */
  boolean releaseHeld(String requestId);

  /**
   * Admits a request whose prompt KV will be copied in: reuses cached prefix blocks, allocates the
   * rest. The caller fills blocks [{@code cachedBlocks}, end) of every layer, then calls {@link
   * #commitImport} or {@link #abortImport}.
   *
   * @return null when there is no room now (nothing is allocated then)
   * @throws IllegalArgumentException if the request can never be served
   */
  PendingImport beginImport(EngineRequest request);

  /** The import's KV are in place: the request decodes from {@code firstToken}, not emitted again. */
  void commitImport(PendingImport pending, int firstToken);

  /**
   * As {@link #commitImport}, for an import whose blocks were written into {@link #deviceKv()}
   * rather than the host cache: the engine copies them into the host cache first.
   *
   * @throws UnsupportedOperationException for an engine without a device copy
   */
  default void commitDeviceImport(PendingImport pending, int firstToken) {
    throw new UnsupportedOperationException("this engine keeps no KV cache in GPU memory to import into");
  }

  /** Gives the import's blocks back. */
  void abortImport(PendingImport pending);

  /** Blocks (in position order) of an import in progress; the first {@code cachedBlocks} need no copy. */
  record PendingImport(String requestId, int[] blocks, int cachedBlocks) {}

  /** Hears, on the engine thread, that layer {@code layer} of some prompts is complete. */
  @FunctionalInterface
  interface PromptLayerListener {
    /**
     * @param requestIds the requests whose prompt completes in this step
     * @param blocks each request's blocks in position order, same order as {@code requestIds}
     */
    void layerDone(int layer, java.util.List<String> requestIds, java.util.List<int[]> blocks);
  }
}
