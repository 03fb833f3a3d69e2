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
 * <p>Each cached mask remembers the most bytes any of its tokens leaves to complete the output;
 * when that would not fit in the tokens left (each token is at least one byte), the tokens are
 * checked one by one against the budget, and once even that fails, only tokens that bring the end
 * strictly closer are allowed: a value finishes within {@code max_tokens} whenever it can,
 * whatever the model prefers.
 *
 * <p>Threading: not thread-safe; one per engine, used on the engine thread.
 */
public final class TokenMasker {
  /** Cached frame masks (each vocabulary/64 words). */
  static final int CACHE_ENTRIES = 1024;
  /**
   * The work, in frames the grammar steps ({@link StateCache#framesStepped}), past which one call
   * computes no more masks of new frames: each is a walk of the vocabulary, up to tens of ms for a
   * frame of an ambiguous grammar whose states hold hundreds of parses. The state's other new
   * frames then go unmasked that time: the tokens allowed are those of the frames masked, a subset
   * of the valid ones, and the frames left out still follow the output, as parses that the model's
   * choice did not need. GrammarMaskBench's constraints take at most 2^14 in a call. The bound
   * grows by {@value #FRAME_WORK} for each frame of the state, so that a wide state of cheap frames
   * (an {@code enum} of a thousand strings: a few hundred each) is masked whole.
   */
  static final int MASK_WORK = 1 << 16;
  static final int FRAME_WORK = 1 << 10;

  private final TokenVocabulary vocabulary;
  private final int words;
  private final ByteTrie trie;
  private final StringTokens strings;
  private final StateCache states = new StateCache();
  private int longestAfter; // during an unlimited walk: the most bytes an allowed token leaves
  private int[] afterOf; // during a frame's walk: the fewest bytes each allowed token leaves (null: not recorded)
  private int plainLeft; // during a frame's walk: what a plain string-body token leaves before its open bytes (-1: none)
  private final int[] afterScratch;
  /** The first {@link #MAX_SHORTER} "shorter" tokens of the frame mask being built, and what each leaves. */
  private final int[] shorterScratch = new int[MAX_SHORTER];
  private final int[] shorterAfterScratch = new int[MAX_SHORTER];
  private final Map<Frame, FrameMask> cache = new LinkedHashMap<>(256, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Frame, FrameMask> eldest) {
      return size() > CACHE_ENTRIES;
    }
  };
  private long hits;
  private long misses;
  private long budgetWalks;
  private long budgetLookups;
  private long framesLeftOut;

  public TokenMasker(TokenVocabulary vocabulary) {
    this.vocabulary = vocabulary;
    this.words = (vocabulary.size() + 63) >>> 6;
    byte[][] keys = new byte[vocabulary.size()][];
    for (int t = 0; t < keys.length; t++) {
      keys[t] = vocabulary.bytes(t);
    }
    this.trie = new ByteTrie(keys);
    this.afterScratch = new int[vocabulary.size()];
    Arrays.fill(afterScratch, Integer.MAX_VALUE);
    this.strings = new StringTokens(vocabulary);
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
   * included) too few for anything but the shortest completion, only tokens that shorten it. Of
   * the state's frames whose masks are not cached, those reached after {@value #MASK_WORK} frames
   * stepped in this call, and {@value #FRAME_WORK} more per frame of the state, do not count.
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
    List<FrameMask> masks = new java.util.ArrayList<>(states.size());
    boolean withinBudget = budget >= left;
    long work = this.states.framesStepped();
    long allowance = MASK_WORK + (long) FRAME_WORK * states.size();
    for (Frame f : states) {
      if (f == Frame.ACCEPT) {
        continue;
      }
      if (!masks.isEmpty() && this.states.framesStepped() - work > allowance && !cache.containsKey(f)) {
        framesLeftOut++;
        continue;
      }
      FrameMask m = frameMask(state.grammar(), f);
      masks.add(m);
      withinBudget &= m.longestAfter <= budget;
    }
    if (!withinBudget) {
      // Some allowed token would leave too little room: check each against the budget (or, once
      // the budget cannot be met, allow only tokens that bring the end closer) — from each frame's
      // record of what its tokens leave where it has one, else by walking the vocabulary.
      int limit = budget >= left ? budget : left - 1;
      boolean listed = true;
      for (FrameMask m : masks) {
        listed &= m.within(limit, mask, strings);
      }
      if (listed) {
        budgetLookups++;
      } else {
        budgetWalks++;
        Arrays.fill(mask, 0L);
        walkFrom(state.grammar(), states, mask, limit);
      }
      clearEnds(endTokens, mask);
      int n = count(mask);
      if (complete) {
        n += setEnds(endTokens, mask);
      }
      if (n > 0) {
        return n;
      }
    }
    for (FrameMask m : masks) {
      for (int i = 0; i < words; i++) {
        mask[i] |= m.bits[i];
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

  /** Frames left out of a mask: new ones reached once the call's work passed its bound. */
  public long framesLeftOut() {
    return framesLeftOut;
  }

  /** Masks checked token by token against the budget (near {@code max_tokens}) by walking the vocabulary. */
  public long budgetWalks() {
    return budgetWalks;
  }

  /** Masks checked against the budget from the frames' records of the tokens that leave fewer bytes. */
  public long budgetLookups() {
    return budgetLookups;
  }

  /**
   * A frame's allowed tokens, the most bytes any of them leaves to complete the output, and — where
   * they are few — the tokens that leave fewer ({@code shorter}, with what each leaves in {@code
   * shorterAfter}; null where there are many), which is all a budget below {@code longestAfter}
   * can allow of this frame. Inside a string, the plain tokens are not listed: each leaves {@code
   * plainLeft} bytes and those its last character still misses ({@code -1}: not a string body).
   */
  private record FrameMask(long[] bits, int longestAfter, int[] shorter, int[] shorterAfter, int plainLeft) {
    /** Sets the tokens this frame allows that leave at most {@code limit} bytes; false if that needs a walk. */
    boolean within(int limit, long[] mask, StringTokens strings) {
      if (longestAfter <= limit) {
        for (int i = 0; i < bits.length; i++) {
          mask[i] |= bits[i];
        }
        return true;
      }
      if (shorter == null) {
        return false;
      }
      for (int open = 0; plainLeft >= 0 && open < strings.plainByOpen.length && plainLeft + open <= limit; open++) {
        long[] plain = strings.plainByOpen[open];
        for (int i = 0; i < plain.length; i++) {
          mask[i] |= plain[i];
        }
      }
      for (int k = 0; k < shorter.length; k++) {
        if (shorterAfter[k] <= limit) {
          mask[shorter[k] >>> 6] |= 1L << shorter[k];
        }
      }
      return true;
    }
  }

  /** Most tokens a frame keeps listed as leaving fewer bytes than its longest (see {@link FrameMask}). */
  static final int MAX_SHORTER = 4096;

  private FrameMask frameMask(Grammar grammar, Frame f) {
    FrameMask m = cache.get(f);
    if (m != null) {
      hits++;
      return m;
    }
    misses++;
    long[] bits = new long[words];
    longestAfter = 0;
    afterOf = afterScratch;
    plainLeft = -1;
    walkFrom(grammar, List.of(f), bits, -1);
    boolean recorded = afterOf != null;
    afterOf = null;
    // The tokens that leave fewer bytes than the longest, if few; the scratch goes back to unset.
    int n = 0;
    for (int w = 0; w < words; w++) {
      for (long word = bits[w]; word != 0; word &= word - 1) {
        int t = w * 64 + Long.numberOfTrailingZeros(word);
        if (afterScratch[t] < longestAfter) {
          if (n < MAX_SHORTER) {
            shorterScratch[n] = t;
            shorterAfterScratch[n] = afterScratch[t];
          }
          n++;
        }
        afterScratch[t] = Integer.MAX_VALUE;
      }
    }
    boolean few = recorded && n <= MAX_SHORTER;
    int[] shorter = few ? Arrays.copyOf(shorterScratch, n) : null;
    int[] shorterAfter = few ? Arrays.copyOf(shorterAfterScratch, n) : null;
    m = new FrameMask(bits, longestAfter, shorter, shorterAfter, plainLeft);
    cache.put(f, m);
    return m;
  }

  private void walkFrom(Grammar grammar, List<Frame> states, long[] mask, int limit) {
    if (states.size() == 1 && states.get(0).node instanceof GrammarNode.Str str && states.get(0).aux == 1) {
      stringBody(grammar, states.get(0), str, mask, limit);
    } else {
      walk(grammar, this.states.of(states), trie, 0, mask, limit, null);
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
        longestAfter = Math.max(longestAfter, completeLeft + 3);
        plainLeft = completeLeft; // each plain token leaves this and its open bytes (not recorded one by one)
      } else {
        for (int t = 0; t < strings.kind.length; t++) {
          byte k = strings.kind[t];
          if ((k == StringTokens.COMPLETE || k == StringTokens.OPEN) && completeLeft + strings.open[t] <= limit) {
            allow(mask, t, completeLeft + strings.open[t]);
          }
        }
      }
    } else {
      for (int t = 0; t < strings.kind.length; t++) {
        byte k = strings.kind[t];
        if (k != StringTokens.COMPLETE && k != StringTokens.OPEN) {
          continue;
        }
        int pos = f.pos + strings.chars[t];
        boolean fits = k == StringTokens.COMPLETE ? pos <= str.maxChars : pos + 1 <= str.maxChars;
        int after = k == StringTokens.COMPLETE
            ? Math.max(0, str.minChars - pos) + 1 + rest
            : strings.open[t] + Math.max(0, str.minChars - pos - 1) + 1 + rest;
        if (fits && (limit < 0 || after <= limit)) {
          allow(mask, t, after);
        }
      }
    }
    // Tokens that close the string: what follows depends only on the frames above it.
    int closeAt = str.counted ? Math.min(Math.max(f.pos, str.minChars), str.maxChars) : 0;
    StateCache.State closed = states.step(grammar, states.of(List.of(new Frame(str, closeAt, 1, null, f.parent))), '"');
    if (closed != StateCache.DEAD) {
      java.util.function.IntPredicate fits = !str.counted ? null : t -> {
        int pos = f.pos + strings.chars[t];
        return pos >= str.minChars && pos <= str.maxChars;
      };
      ByteTrie rests = strings.quotedRests;
      if (rests.tokenAt[0] >= 0) {
        mark(rests, 0, closed.remaining, mask, limit, fits);
      }
      walk(grammar, closed, rests, 0, mask, limit, fits);
    }
    StateCache.State start = states.of(List.of(f));
    for (int t : strings.escaped) {
      StateCache.State s = start;
      for (byte b : vocabulary.bytes(t)) {
        s = states.step(grammar, s, b & 0xff);
        if (s == StateCache.DEAD) {
          break;
        }
      }
      if (s != StateCache.DEAD && (limit < 0 || s.remaining <= limit)) {
        allow(mask, t, s.remaining);
      }
    }
  }

  /**
   * Marks the tokens under {@code node} of {@code in} that keep the grammar alive; with {@code
   * limit} ≥ 0 only those after which at most {@code limit} bytes complete the output. With {@code
   * counted}, a token is marked only if {@code fits} says its string length is allowed.
   */
  private void walk(Grammar grammar, StateCache.State from, ByteTrie in, int node, long[] mask, int limit,
      java.util.function.IntPredicate fits) {
    for (int e = in.edgeStart[node]; e < in.edgeStart[node + 1]; e++) {
      StateCache.State next = states.step(grammar, from, in.edgeByte[e] & 0xff);
      if (next == StateCache.DEAD) {
        continue;
      }
      int child = in.edgeTarget[e];
      if (in.tokenAt[child] >= 0) {
        mark(in, child, next.remaining, mask, limit, fits);
      }
      if (in.hasChildren(child)) {
        walk(grammar, next, in, child, mask, limit, fits);
      }
    }
  }

  private void mark(ByteTrie in, int node, int left, long[] mask, int limit, java.util.function.IntPredicate fits) {
    if (limit >= 0 && left > limit) {
      return;
    }
    for (int t = in.tokenAt[node]; t >= 0; t = in.sameBytes[t]) {
      if (fits == null || fits.test(t)) {
        allow(mask, t, left);
      }
    }
  }

  /** Allows token {@code t}, after which {@code after} bytes complete the output. */
  private void allow(long[] mask, int t, int after) {
    mask[t >>> 6] |= 1L << t;
    longestAfter = Math.max(longestAfter, after);
    if (afterOf != null && after < afterOf[t]) {
      afterOf[t] = after;
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
