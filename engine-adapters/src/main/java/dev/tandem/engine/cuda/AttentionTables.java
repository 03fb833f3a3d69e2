package dev.tandem.engine.cuda;

import dev.tandem.engine.compute.AttentionBatch;
import it.unimi.dsi.fastutil.ints.Int2IntLinkedOpenHashMap;
import java.lang.foreign.MemorySegment;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * What an attention call over a host KV cache sends to the device: the blocks its rows read, each
 * once, in a compacted numbering ({@code blocks[i]} is the cache block that becomes block i), and
 * each row's block table in that numbering, tables shared by several rows stored once ({@code
 * tables} from {@code starts[t]}). Entries for blocks no row reads are 0 and never read.
 */
record AttentionTables(int[] blocks, int[] tables, int[] starts) {
  static AttentionTables of(AttentionBatch b) {
    Int2IntLinkedOpenHashMap compact = new Int2IntLinkedOpenHashMap();
    Map<int[], Integer> tableStarts = new IdentityHashMap<>();
    int[] starts = new int[b.rows()];
    int length = 0;
    for (int t = 0; t < b.rows(); t++) {
      int[] table = b.blockTables()[t];
      int used = b.positions()[t] / b.blockSize() + 1;
      for (int i = 0; i < used; i++) {
        compact.putIfAbsent(table[i], compact.size());
      }
      Integer start = tableStarts.get(table);
      if (start == null) {
        tableStarts.put(table, length);
        start = length;
        length += table.length;
      }
      starts[t] = start;
    }
    int[] tables = new int[Math.max(1, length)];
    for (Map.Entry<int[], Integer> e : tableStarts.entrySet()) {
      int[] table = e.getKey();
      for (int i = 0; i < table.length; i++) {
        tables[e.getValue() + i] = compact.getOrDefault(table[i], 0);
      }
    }
    return new AttentionTables(compact.keySet().toIntArray(), tables, starts);
  }

  /** Bytes of the gathered keys (the values follow them): every read block once. */
  long keyBytes(AttentionBatch b) {
    return blocks.length * blockBytes(b);
  }

  /** Copies the read blocks' keys, then their values, into {@code to} in the compacted order. */
  void gather(AttentionBatch b, MemorySegment to) {
    long blockBytes = blockBytes(b);
    long keyBytes = keyBytes(b);
    for (int i = 0; i < blocks.length; i++) {
      MemorySegment.copy(b.keys(), blocks[i] * blockBytes, to, i * blockBytes, blockBytes);
      MemorySegment.copy(b.values(), blocks[i] * blockBytes, to, keyBytes + i * blockBytes, blockBytes);
    }
  }

  private static long blockBytes(AttentionBatch b) {
    return (long) b.blockSize() * b.kvDim() * b.kvDtype().bytes();
  }
}
