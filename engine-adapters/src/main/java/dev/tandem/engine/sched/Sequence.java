package dev.tandem.engine.sched;

import dev.tandem.common.TokenLogprob;
import dev.tandem.common.BlockHasher;
import dev.tandem.engine.EngineRequest;
import java.util.Arrays;

/**
 * One request inside an engine: its tokens (prompt, then generated), the KV blocks it holds, how
 * many tokens' KV exist, and the sequence hashes of its full blocks. Owned by the engine thread.
 */
public final class Sequence {
  final EngineRequest request;
  private static final java.util.concurrent.atomic.AtomicLong ARRIVALS = new java.util.concurrent.atomic.AtomicLong();
  /** When it arrived, as a count: ties of priority go by it. */
  final long arrival = ARRIVALS.incrementAndGet();
  final int promptLength;
  private final long salt; // of its block hashes: its LoRA adapter's, else none
  private Object engineState;
  private TokenLogprob[] promptLogprobs;
  private float[] embedding;
  private TokenLogprob pendingLogprob;
  private int[] tokens; // prompt then generated; [0, length)
  private int length;
  private int[] blocks = new int[8]; // block ids; [0, blockCount)
  private int blockCount;
  private long[] sequenceHashes = new long[8]; // of committed (cached) full blocks
  private long[] localHashes = new long[8];
  private int hashedBlocks;
  int computedTokens; // tokens whose KV exist
  int cachedTokens = -1; // prefix-cache hit at first admission; -1 before admission
  int generated;
  private int drafts; // proposed tokens at tokens[length, length + drafts), run this step to be verified
  private int draftLimit = Integer.MAX_VALUE; // most tokens the next proposal may hold (adapted to what was kept)
  private int draftPause; // decode steps to skip proposing (after a proposal none of which was kept)
  private int draftBackoff; // the last pause's length, doubled at each proposal kept in nothing
  private long[] lookupHashes;
  private int lookupHashesLength = -1;

  Sequence(EngineRequest request) {
    this.request = request;
    this.promptLength = request.promptTokens().length;
    this.salt = request.hashSalt();
    this.tokens = Arrays.copyOf(request.promptTokens(), promptLength + 16);
    this.length = promptLength;
  }

  public String id() {
    return request.requestId();
  }

  public EngineRequest request() {
    return request;
  }

  /**
   * vLLM's {@code bad_words}: the tokens that would complete one of the request's now, given its
   * output so far (a migrated stream's earlier output included).
   */
  public int[] badWordEnds() {
    var sampling = request.sampling();
    return sampling.badWords().isEmpty() ? new int[0]
        : sampling.bannedAfter(tokens, promptLength() - request.resumedOutputTokens(), length);
  }

  public int promptLength() {
    return promptLength;
  }

  /** Prompt plus generated tokens so far. */
  public int length() {
    return length;
  }

  /** The token buffer; entries [0, length()) are valid. */
  public int[] tokens() {
    return tokens;
  }

  /** Tokens generated so far. */
  public int generated() {
    return generated;
  }

  /** Tokens whose KV exist in this sequence's blocks. */
  public int computedTokens() {
    return computedTokens;
  }

  /** Tokens still to run through the model before the next token can be drawn. */
  public int pendingTokens() {
    return length - computedTokens;
  }

  public boolean inPrefill() {
    return computedTokens < promptLength;
  }

  /** Whatever the engine keeps per sequence (sampler state, a draw seed); null until set. */
  @SuppressWarnings("unchecked")
  public <T> T engineState() {
    return (T) engineState;
  }

  public void setEngineState(Object state) {
    this.engineState = state;
  }

  /** Log-probabilities of the token being drawn now; the scheduler puts them into the output. */
  public void setDrawnLogprob(TokenLogprob logprob) {
    this.pendingLogprob = logprob;
  }

  /** The prompt's log-probabilities (one per token after the first), sent with the first output. */
  public void setPromptLogprobs(TokenLogprob[] logprobs) {
    this.promptLogprobs = logprobs;
  }

  /** The prompt's embedding ({@code GenerationRequest.embed}), sent with the first output. */
  public void setEmbedding(float[] embedding) {
    this.embedding = embedding;
  }

  float[] takeEmbedding() {
    float[] e = embedding;
    embedding = null;
    return e;
  }

  TokenLogprob[] takePromptLogprobs() {
    TokenLogprob[] l = promptLogprobs;
    promptLogprobs = null;
    return l;
  }

  TokenLogprob takeDrawnLogprob() {
    TokenLogprob l = pendingLogprob;
    pendingLogprob = null;
    return l;
  }

  /** Tokens proposed for this step's verification ({@link SpeculativeConfig}); 0 outside one. */
  public int drafts() {
    return drafts;
  }

  /** Proposes {@code count} tokens, as {@link SpeculativeConfig#propose} would, after the current ones. */
  int propose(SpeculativeConfig speculation, int max, int[] scratch) {
    int count = speculation.propose(tokens, length, max, scratch);
    if (length + count > tokens.length) {
      tokens = Arrays.copyOf(tokens, Math.max(tokens.length * 2, length + count));
    }
    System.arraycopy(scratch, 0, tokens, length, count);
    drafts = count;
    return count;
  }

  /** Keeps the first {@code k} tokens of this step's proposal (at most those proposed); returns how many are kept. */
  int cutProposal(int k) {
    drafts = Math.max(0, Math.min(drafts, k));
    return drafts;
  }

  /**
   * Ends this step's verification of {@code drafts()} proposed tokens, {@code kept} of them kept,
   * and adapts the next proposal: one all kept doubles the limit (up to {@code max}); one partly
   * kept proposes one token more than it kept; one none of which was kept pauses proposals for 1,
   * 2, 4 … up to 64 decode steps, so that text the lookup cannot predict costs a failed pass
   * rarely (on a CPU a pass verifying one proposed token costs 1.5–2 plain steps).
   */
  void endVerification(int kept, int max) {
    if (kept == drafts) {
      draftLimit = Math.min(max, 2 * drafts);
      draftBackoff = 0;
    } else if (kept > 0) {
      draftLimit = kept + 1;
      draftBackoff = 0;
    } else {
      draftLimit = 1;
      draftBackoff = Math.min(MAX_DRAFT_PAUSE, Math.max(1, 2 * draftBackoff));
      draftPause = draftBackoff;
    }
    drafts = 0;
  }

  /** The longest pause between proposals of a sequence whose proposals keep failing. */
  static final int MAX_DRAFT_PAUSE = 64;

  /** Whether this decode step may propose; counts a paused step down. */
  boolean mayPropose() {
    if (draftPause > 0) {
      draftPause--;
      return false;
    }
    return true;
  }

  /** Most tokens the next proposal may hold. */
  int draftLimit() {
    return draftLimit;
  }

  void append(int token) {
    if (length == tokens.length) {
      tokens = Arrays.copyOf(tokens, tokens.length * 2);
    }
    tokens[length++] = token;
    generated++;
  }

  public int blockCount() {
    return blockCount;
  }

  /** Block ids in position order; entries [0, blockCount()) are valid. */
  public int[] blocks() {
    return blocks;
  }

  void addBlock(int id) {
    if (blockCount == blocks.length) {
      blocks = Arrays.copyOf(blocks, blocks.length * 2);
    }
    blocks[blockCount++] = id;
  }

  /** Forgets the blocks past the first {@code count} (the caller returns them to the pool). */
  void truncateBlocks(int count) {
    if (count < hashedBlocks) {
      throw new IllegalStateException("block " + count + " holds committed KV");
    }
    blockCount = Math.min(blockCount, count);
  }

  void clearBlocks() {
    blockCount = 0;
    hashedBlocks = 0;
    computedTokens = 0;
  }

  int hashedBlocks() {
    return hashedBlocks;
  }

  long[] sequenceHashes() {
    return sequenceHashes;
  }

  long[] localHashes() {
    return localHashes;
  }

  /** Hashes full blocks up to {@code fullBlocks}; returns the index of the first new one. */
  int hashFullBlocks(int fullBlocks, int blockSize) {
    int first = hashedBlocks;
    if (fullBlocks > sequenceHashes.length) {
      int n = Math.max(fullBlocks, sequenceHashes.length * 2);
      sequenceHashes = Arrays.copyOf(sequenceHashes, n);
      localHashes = Arrays.copyOf(localHashes, n);
    }
    for (int b = hashedBlocks; b < fullBlocks; b++) {
      long local = BlockHasher.localHash(tokens, b * blockSize, blockSize);
      localHashes[b] = local;
      sequenceHashes[b] = b == 0 ? BlockHasher.first(salt, local) : BlockHasher.chain(sequenceHashes[b - 1], local);
    }
    hashedBlocks = Math.max(hashedBlocks, fullBlocks);
    return first;
  }

  /**
   * Sequence hashes of every full block of the current tokens, for prefix lookup. Kept until the
   * sequence grows: a request waiting for admission is looked up every step.
   */
  long[] allFullBlockHashes(int blockSize) {
    if (lookupHashes == null || lookupHashesLength != length) {
      lookupHashes = BlockHasher.sequenceHashes(Arrays.copyOf(tokens, length), blockSize, salt);
      lookupHashesLength = length;
    }
    return lookupHashes;
  }
}
