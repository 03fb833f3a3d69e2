package dev.tandem.engine.builtin;

import dev.tandem.common.PageMemory;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.BitSet;
import java.util.function.LongFunction;

/**
 * The KV cache's memory: per layer, one off-heap segment of keys and one of values, each {@code
 * [block][slot][kvHead][headDim]} in the cache's dtype (f32, or bf16 / f16: half the bytes, so twice
 * the tokens a byte budget holds and half the bytes a KV transfer moves; writes round to nearest
 * even, attention widens to f32 as it reads). Which block belongs to whom is the {@link
 * dev.tandem.engine.kv.BlockPool}'s business; this class only stores bytes. One block of one layer
 * is a contiguous byte range ({@link #keyBlock}, {@link #valueBlock}), which is what disaggregated
 * serving moves.
 *
 * <p>Ownership: owns its memory (a shared arena) until {@link #close()}, or until {@link
 * #relocate} moves it into memory someone else owns. Written and read by the
 * engine thread and the compute backend's threads inside its calls.
 */
public final class PagedKvCache implements AutoCloseable {
  private final Arena arena = Arena.ofShared();
  private final int blocks;
  private final int blockSize;
  private final int kvDim;
  private final DType dtype;
  private final MemorySegment[] keys; // per layer: (blocks × blockSize, kvDim)
  private final MemorySegment[] values; // per layer: (blocks × blockSize, kvDim)

  public PagedKvCache(ModelConfig config, int blocks, int blockSize, DType dtype) {
    this.blocks = blocks;
    this.blockSize = blockSize;
    this.kvDim = config.kvDim();
    this.dtype = dtype;
    long layerBytes = (long) blocks * blockSize * kvDim * dtype.bytes();
    this.keys = new MemorySegment[config.numLayers()];
    this.values = new MemorySegment[config.numLayers()];
    for (int l = 0; l < keys.length; l++) {
      // Whole pages (a GPU worker maps them: cuMemHostRegister), zeroed by the kernel as blocks first fill.
      keys[l] = PageMemory.allocate(arena, layerBytes);
      values[l] = PageMemory.allocate(arena, layerBytes);
    }
  }

  /**
   * Moves every layer's keys and values into memory from {@code allocate} and frees this cache's
   * own memory; the new memory is the caller's to free, after this cache's last use. Only the
   * blocks of {@code holding} are copied: a free block's contents are never read before the engine
   * writes it, and copying them would touch every page of both regions (seconds a GiB where a page
   * fault costs microseconds) for nothing.
   */
  public void relocate(LongFunction<MemorySegment> allocate, BitSet holding) {
    for (int l = 0; l < keys.length; l++) {
      keys[l] = moved(keys[l], allocate, holding);
      values[l] = moved(values[l], allocate, holding);
    }
    arena.close();
  }

  private MemorySegment moved(MemorySegment from, LongFunction<MemorySegment> allocate, BitSet holding) {
    MemorySegment to = allocate.apply(from.byteSize());
    if (to.byteSize() != from.byteSize()) {
      throw new IllegalArgumentException("asked for " + from.byteSize() + " bytes, got " + to.byteSize());
    }
    long block = blockBytes();
    for (int b = holding.nextSetBit(0); b >= 0 && b < blocks; b = holding.nextSetBit(b)) {
      int start = b;
      b = Math.min(blocks, holding.nextClearBit(b)); // a run of blocks in one copy
      MemorySegment.copy(from, start * block, to, start * block, (b - start) * block);
    }
    return to;
  }

  /** Bytes of one block in one layer, for keys or values alone. */
  public long blockBytes() {
    return (long) blockSize * kvDim * dtype.bytes();
  }

  /** The element type of every key and value stored. */
  public DType dtype() {
    return dtype;
  }

  public int blocks() {
    return blocks;
  }

  /** Tokens a block holds. */
  public int blockSize() {
    return blockSize;
  }

  public int layers() {
    return keys.length;
  }

  public MemorySegment keys(int layer) {
    return keys[layer];
  }

  public MemorySegment values(int layer) {
    return values[layer];
  }

  public MemorySegment keyBlock(int layer, int block) {
    return keys[layer].asSlice(block * blockBytes(), blockBytes());
  }

  public MemorySegment valueBlock(int layer, int block) {
    return values[layer].asSlice(block * blockBytes(), blockBytes());
  }

  /** Stores one token's keys and values ({@code kvDim} floats each from the given rows). */
  void write(int layer, int block, int slot, float[] k, float[] v, int rowOffset) {
    long entry = ((long) block * blockSize + slot) * kvDim;
    if (dtype == DType.F32) {
      MemorySegment.copy(k, rowOffset, keys[layer], ValueLayout.JAVA_FLOAT_UNALIGNED, entry * Float.BYTES, kvDim);
      MemorySegment.copy(v, rowOffset, values[layer], ValueLayout.JAVA_FLOAT_UNALIGNED, entry * Float.BYTES, kvDim);
      return;
    }
    narrow(k, rowOffset, keys[layer], entry);
    narrow(v, rowOffset, values[layer], entry);
  }

  private void narrow(float[] from, int offset, MemorySegment to, long entry) {
    for (int i = 0; i < kvDim; i++) {
      to.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, entry + i, dtype.narrow(from[offset + i]));
    }
  }

  @Override
  public void close() {
    if (arena.scope().isAlive()) {
      arena.close();
    }
  }
}
