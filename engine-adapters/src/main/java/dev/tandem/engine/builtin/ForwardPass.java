package dev.tandem.engine.builtin;

import dev.tandem.engine.KvHandoff;
import java.util.List;
import java.util.Optional;
import java.util.function.IntConsumer;

/**
 * The model's forward pass over a batch of slices, writing their keys and values into the {@link
 * PagedKvCache}: {@link Transformer} on any compute backend (activations in Java arrays), or
 * {@link CudaTransformer} with activations and a copy of the cache in GPU memory. Whichever runs,
 * the host cache holds every key and value once a pass returns (and a layer's once {@code
 * layerKvWritten} hears of it), so exporting KV for disaggregation works the same.
 *
 * <p>Threading: owned by the engine thread.
 */
public interface ForwardPass extends AutoCloseable {
  /**
   * Runs the slices; returns logits {@code (vocab)} for each slice that wants them, in slice
   * order (null for the others). {@code layerKvWritten} (may be null) hears each layer's index once
   * its keys and values are in the host cache; {@code positionLogits} (may be null) gets the logits
   * after each token a slice's {@code promptLogitsBefore} asks for.
   */
  float[][] forward(
      List<Transformer.Slice> slices, PagedKvCache cache, IntConsumer layerKvWritten, Transformer.PositionLogits positionLogits);

  /** As above, with no layer listener and no prompt logits. */
  default float[][] forward(List<Transformer.Slice> slices, PagedKvCache cache) {
    return forward(slices, cache, null, null);
  }

  /**
   * The final norm's output for the last token of slice {@code slice} of the last {@link #forward}
   * (a slice that wanted logits): the hidden state the LM head read, a prompt's embedding.
   *
   * @throws IllegalStateException for a slice that wanted no logits
   */
  float[] finalHidden(int slice);

  /** Blocks {@code blocks[from..]} of the host cache were written by someone else (a KV import). */
  default void hostBlocksWritten(PagedKvCache cache, int[] blocks, int from) {}

  /** The cache's copy in GPU memory, where this pass keeps one ({@link KvHandoff#deviceKv()}). */
  default Optional<KvHandoff.DeviceKv> deviceKv() {
    return Optional.empty();
  }

  /**
   * Blocks {@code blocks[from..]} of the GPU's copy were written by someone else (a KV import over
   * {@code cuda-ipc}): copies them into the host cache, which must hold every block.
   *
   * @throws UnsupportedOperationException for a pass without a GPU copy
   */
  default void deviceBlocksWritten(PagedKvCache cache, int[] blocks, int from) {
    throw new UnsupportedOperationException("this forward pass keeps no KV cache in GPU memory");
  }

  /** {@link KvHandoff#measureHostDeviceCopy}: empty for a pass without a GPU copy. */
  default Optional<KvHandoff.HostDeviceCopy> measureHostDeviceCopy(long bytes) {
    return Optional.empty();
  }

  /** The host cache's memory is about to move ({@link PagedKvCache#relocate}). */
  default void hostCacheMoving() {}

  @Override
  default void close() {}
}
