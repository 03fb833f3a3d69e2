package dev.tandem.engine.grammar;

import java.util.Arrays;

/**
 * Token ids arranged by their byte strings in a trie, so that a walk shares the work of common
 * prefixes and one dead prefix prunes every token under it. Node 0 is the root (the empty
 * string); node n's children are the edges [{@link #edgeStart}[n], {@code edgeStart[n + 1]}),
 * in byte order.
 *
 * <p>Immutable.
 */
final class ByteTrie {
  final int[] edgeStart;
  final byte[] edgeByte;
  final int[] edgeTarget;
  final int[] tokenAt; // per node: a token whose bytes end here, or -1
  final int[] sameBytes; // per token: another token with the same bytes, or -1

  /** A trie of {@code keys[t]} for every token t whose key is not null (an empty key sits at the root). */
  ByteTrie(byte[][] keys) {
    int n = keys.length;
    Integer[] order = new Integer[n];
    int count = 0;
    for (int t = 0; t < n; t++) {
      if (keys[t] != null) {
        order[count++] = t;
      }
    }
    Integer[] tokens = Arrays.copyOf(order, count);
    Arrays.sort(tokens, (a, b) -> Arrays.compareUnsigned(keys[a], keys[b]));
    // Insert in sorted order: a key shares its path with the previous one up to their common prefix.
    int maxNodes = 1;
    for (Integer t : tokens) {
      maxNodes += keys[t].length;
    }
    int[] parentOf = new int[maxNodes];
    byte[] byteOf = new byte[maxNodes];
    int[] tokenAtNode = new int[maxNodes];
    Arrays.fill(tokenAtNode, -1);
    sameBytes = new int[n];
    Arrays.fill(sameBytes, -1);
    int nodes = 1;
    int[] path = new int[1];
    byte[] previous = new byte[0];
    for (Integer t : tokens) {
      byte[] b = keys[t];
      if (path.length < b.length + 1) {
        path = Arrays.copyOf(path, b.length + 1);
      }
      int common = 0;
      while (common < Math.min(b.length, previous.length) && b[common] == previous[common]) {
        common++;
      }
      for (int i = common; i < b.length; i++) {
        parentOf[nodes] = path[i];
        byteOf[nodes] = b[i];
        path[i + 1] = nodes++;
      }
      int end = path[b.length];
      if (tokenAtNode[end] >= 0) {
        sameBytes[t] = tokenAtNode[end];
      }
      tokenAtNode[end] = t;
      previous = b;
    }
    // Group edges by parent (children were created in byte order per parent).
    edgeStart = new int[nodes + 1];
    for (int c = 1; c < nodes; c++) {
      edgeStart[parentOf[c] + 1]++;
    }
    for (int i = 0; i < nodes; i++) {
      edgeStart[i + 1] += edgeStart[i];
    }
    edgeByte = new byte[Math.max(0, nodes - 1)];
    edgeTarget = new int[Math.max(0, nodes - 1)];
    int[] fill = Arrays.copyOf(edgeStart, nodes);
    for (int c = 1; c < nodes; c++) {
      int e = fill[parentOf[c]]++;
      edgeByte[e] = byteOf[c];
      edgeTarget[e] = c;
    }
    tokenAt = Arrays.copyOf(tokenAtNode, nodes);
  }

  boolean hasChildren(int node) {
    return edgeStart[node] < edgeStart[node + 1];
  }
}
