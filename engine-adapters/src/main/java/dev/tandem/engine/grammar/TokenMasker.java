package dev.tandem.engine.grammar;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which tokens of the vocabulary may come next: a token is allowed when its bytes keep the
 * grammar alive. The vocabulary sits in a byte trie, walked with the matcher so that a dead prefix
 * prunes every token under it; the mask of each matcher frame is cached (frames recur: the body of
 * a string, a property's value), and a state's mask is the union of its frames' masks.
 *
 * <p>Near the token budget it allows only tokens after which the output can still be completed
 * within the tokens left (each token is at least one byte), and once even that fails, tokens that
 * bring it strictly closer: a value finishes within {@code max_tokens} whenever it can, whatever
 * the model prefers.
 *
 * <p>Threading: not thread-safe; one per engine, used on the engine thread.
 */
public final class TokenMasker {
  /** Cached frame masks (each vocabulary/64 words). */
  static final int CACHE_ENTRIES = 1024;
  /**
   * Within this many bytes of the budget, each token is checked against it (uncached): a token
   * that opens a long required structure could otherwise leave too few tokens to close it.
   */
  static final int BUDGET_WINDOW = 32;

  private final TokenVocabulary vocabulary;
  private final int words;
  // The trie: node 0 is the root; node n's children are edges [edgeStart[n], edgeStart[n + 1]).
  private final int[] edgeStart;
  private final byte[] edgeByte;
  private final int[] edgeTarget;
  private final int[] tokenAt; // per node: a token whose bytes end here, or -1
  private final int[] sameBytes; // per token: another token with the same bytes, or -1
  private final StringTokens strings;
  private final Map<Frame, long[]> cache = new LinkedHashMap<>(256, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Frame, long[]> eldest) {
      return size() > CACHE_ENTRIES;
    }
  };
  private long hits;
  private long misses;

  public TokenMasker(TokenVocabulary vocabulary) {
    this.vocabulary = vocabulary;
    this.words = (vocabulary.size() + 63) >>> 6;
    int n = vocabulary.size();
    Integer[] order = new Integer[n];
    int count = 0;
    for (int t = 0; t < n; t++) {
      if (vocabulary.bytes(t) != null) {
        order[count++] = t;
      }
    }
    Integer[] tokens = Arrays.copyOf(order, count);
    Arrays.sort(tokens, (a, b) -> Arrays.compareUnsigned(vocabulary.bytes(a), vocabulary.bytes(b)));
    // Insert in sorted order: a token shares its path with the previous one up to their common prefix.
    int maxNodes = 1;
    for (Integer t : tokens) {
      maxNodes += vocabulary.bytes(t).length;
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
      byte[] b = vocabulary.bytes(t);
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
    edgeByte = new byte[nodes - 1];
    edgeTarget = new int[nodes - 1];
    int[] fill = Arrays.copyOf(edgeStart, nodes);
    for (int c = 1; c < nodes; c++) {
      int e = fill[parentOf[c]]++;
      edgeByte[e] = byteOf[c];
      edgeTarget[e] = c;
    }
    tokenAt = Arrays.copyOf(tokenAtNode, nodes);
    strings = new StringTokens(vocabulary);
  }

  public TokenVocabulary vocabulary() {
    return vocabulary;
  }

  /** Words of a mask: one bit per token id. */
  public int maskWords() {
    return words;
  }

  /**
   * Fills {@code mask} with the tokens allowed next from {@code state}: those that keep it alive,
   * plus {@code endTokens} where the output is complete. With {@code tokensLeft} (this one
   * included) too few for anything but the shortest completion, only tokens that shorten it.
   *
   * @return the number of allowed tokens (0: the state is stuck; it should end)
   */
  public int mask(GrammarState state, int tokensLeft, int[] endTokens, long[] mask) {
    Arrays.fill(mask, 0L);
    List<Frame> states = state.states();
    boolean complete = states.contains(Frame.ACCEPT);
    int left = Grammar.remaining(states);
    if (complete && (tokensLeft <= 1 || state.finished())) {
      return setEnds(endTokens, mask);
    }
    int budget = tokensLeft - 2; // bytes the output may still need after this token (and an end token)
    if (budget - left < BUDGET_WINDOW) {
      walkFrom(state.grammar(), states, mask, budget >= left ? budget : left - 1);
      clearEnds(endTokens, mask);
      int n = count(mask);
      if (complete) {
        n += setEnds(endTokens, mask);
      }
      if (n > 0) {
        return n;
      }
    }
    for (Frame f : states) {
      if (f != Frame.ACCEPT) {
        long[] m = frameMask(state.grammar(), f);
        for (int i = 0; i < words; i++) {
          mask[i] |= m[i];
        }
      }
    }
    clearEnds(endTokens, mask); // an end token is only ever the end (even where it has bytes)
    if (complete) {
      setEnds(endTokens, mask);
    }
    return count(mask);
  }

  private static void clearEnds(int[] endTokens, long[] mask) {
    for (int t : endTokens) {
      if (t >= 0 && (t >>> 6) < mask.length) {
        mask[t >>> 6] &= ~(1L << t);
      }
    }
  }

  /** Frame masks served from the cache, and computed. */
  public long cacheHits() {
    return hits;
  }

  public long cacheMisses() {
    return misses;
  }

  private long[] frameMask(Grammar grammar, Frame f) {
    long[] m = cache.get(f);
    if (m != null) {
      hits++;
      return m;
    }
    misses++;
    m = new long[words];
    walkFrom(grammar, List.of(f), m, -1);
    cache.put(f, m);
    return m;
  }

  private void walkFrom(Grammar grammar, List<Frame> states, long[] mask, int limit) {
    if (states.size() == 1 && states.get(0).node instanceof GrammarNode.Str str && states.get(0).aux == 1) {
      stringBody(grammar, states.get(0), str, mask, limit);
    } else {
      walk(grammar, states, 0, mask, limit);
    }
  }

  /**
   * Inside a string: plain tokens by their length alone (see {@link StringTokens}), the others
   * byte by byte.
   */
  private void stringBody(Grammar grammar, Frame f, GrammarNode.Str str, long[] mask, int limit) {
    int rest = Grammar.remaining(f) - (Math.max(0, str.minChars - f.pos) + 1); // after the closing quote
    if (!str.counted) {
      int completeLeft = Grammar.remaining(f); // a whole-character token leaves the state as it is
      if (limit < 0 || completeLeft + 3 <= limit) {
        System.arraycopy(strings.plain, 0, mask, 0, words);
      } else {
        for (int t = 0; t < strings.kind.length; t++) {
          if (strings.kind[t] != StringTokens.OTHER && completeLeft + strings.open[t] <= limit) {
            mask[t >>> 6] |= 1L << t;
          }
        }
      }
    } else {
      for (int t = 0; t < strings.kind.length; t++) {
        byte k = strings.kind[t];
        if (k == StringTokens.OTHER) {
          continue;
        }
        int pos = f.pos + strings.chars[t];
        boolean fits = k == StringTokens.COMPLETE ? pos <= str.maxChars : pos + 1 <= str.maxChars;
        int after = k == StringTokens.COMPLETE
            ? Math.max(0, str.minChars - pos) + 1 + rest
            : strings.open[t] + Math.max(0, str.minChars - pos - 1) + 1 + rest;
        if (fits && (limit < 0 || after <= limit)) {
          mask[t >>> 6] |= 1L << t;
        }
      }
    }
    List<Frame> start = List.of(f);
    for (int t : strings.others) {
      List<Frame> s = start;
      for (byte b : vocabulary.bytes(t)) {
        s = grammar.step(s, b & 0xff);
        if (s.isEmpty()) {
          break;
        }
      }
      if (!s.isEmpty() && (limit < 0 || Grammar.remaining(s) <= limit)) {
        mask[t >>> 6] |= 1L << t;
      }
    }
  }

  /**
   * Marks the tokens under trie node {@code node} that keep the grammar alive; with {@code limit}
   * ≥ 0 only those after which at most {@code limit} bytes complete the output.
   */
  private void walk(Grammar grammar, List<Frame> states, int node, long[] mask, int limit) {
    for (int e = edgeStart[node]; e < edgeStart[node + 1]; e++) {
      List<Frame> next = grammar.step(states, edgeByte[e] & 0xff);
      if (next.isEmpty()) {
        continue;
      }
      int child = edgeTarget[e];
      if (tokenAt[child] >= 0 && (limit < 0 || Grammar.remaining(next) <= limit)) {
        for (int t = tokenAt[child]; t >= 0; t = sameBytes[t]) {
          mask[t >>> 6] |= 1L << t;
        }
      }
      if (edgeStart[child] < edgeStart[child + 1]) {
        walk(grammar, next, child, mask, limit);
      }
    }
  }

  private static int setEnds(int[] endTokens, long[] mask) {
    int n = 0;
    for (int t : endTokens) {
      if (t >= 0 && (t >>> 6) < mask.length && (mask[t >>> 6] & (1L << t)) == 0) {
        mask[t >>> 6] |= 1L << t;
        n++;
      }
    }
    return n;
  }

  private static int count(long[] mask) {
    int n = 0;
    for (long w : mask) {
      n += Long.bitCount(w);
    }
    return n;
  }
}
