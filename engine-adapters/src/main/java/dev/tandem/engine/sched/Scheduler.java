package dev.tandem.engine.sched;

import dev.tandem.common.TokenLogprob;
import dev.tandem.common.FinishReason;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.common.FinishReason;
import dev.tandem.engine.kv.BlockPool;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Continuous batching over a {@link BlockPool}: running sequences first (decode and unfinished
 * prefill chunks), then waiting ones in arrival order while the token budget, free blocks and
 * {@code max_num_seqs} allow. A waiting sequence reuses the longest cached prefix of its full
 * blocks. When blocks run out, the newest running sequence is preempted by recompute (its blocks
 * are freed; it goes back to the head of the queue). Full blocks are committed to the prefix cache
 * as soon as their KV exist.
 *
 * <p>One algorithm (admission, chunking, preemption and completion of one step), about 400 lines.
 *
 * <p>Threading: owned by the engine thread; not thread-safe.
 */
public final class Scheduler {
  /** Draws the next token of entry {@code index} of the batch just computed. */
  @FunctionalInterface
  public interface TokenDrawer {
    int draw(int index, Sequence sequence);
  }

  private final SchedulerConfig config;
  private final BlockPool pool;
  private final int blockSize;
  private final int maxContextLength;
  private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
  private final List<Sequence> running = new ArrayList<>();
  private final Map<String, Sequence> byId = new HashMap<>();
  private final java.util.Set<String> retainOnFinish = new java.util.HashSet<>();
  private final Map<String, Sequence> retained = new HashMap<>();
  private long preemptions;

  public Scheduler(SchedulerConfig config, BlockPool pool) {
    this.config = config;
    this.pool = pool;
    this.blockSize = pool.blockSize();
    // Like vLLM, never admit a context the whole pool could not hold: a lone sequence always fits.
    this.maxContextLength =
        (int) Math.min(config.maxContextLength(), (long) pool.totalBlocks() * blockSize);
  }

  public BlockPool pool() {
    return pool;
  }

  /** The context limit actually enforced: the configured one, or what the whole pool holds. */
  /** The batching limits, as routers see them. */
  public dev.tandem.engine.EngineInfo.Batching batching() {
    return new dev.tandem.engine.EngineInfo.Batching(config.maxNumSeqs(), config.maxBatchedTokens());
  }

  public int maxContextLength() {
    return maxContextLength;
  }

  /**
   * Queues a request and returns its sequence.
   *
   * @throws IllegalArgumentException if it can never be served; nothing is queued then
   */
  public Sequence add(EngineRequest request) {
    int prompt = request.promptTokens().length;
    int maxTokens = request.stop().maxTokens();
    if (byId.containsKey(request.requestId())) {
      throw new IllegalArgumentException("request id " + request.requestId() + " is in use");
    }
    if ((long) prompt + maxTokens > maxContextLength) {
      throw new IllegalArgumentException(
          "this model's maximum context length is "
              + maxContextLength
              + " tokens; the request asks for "
              + ((long) prompt + maxTokens)
              + " ("
              + prompt
              + " in the prompt, "
              + maxTokens
              + " to generate)");
    }
    if (!config.chunkedPrefill() && prompt > config.maxBatchedTokens()) {
      throw new IllegalArgumentException(
          "prompt of "
              + prompt
              + " tokens exceeds max_batched_tokens "
              + config.maxBatchedTokens()
              + " and chunked prefill is off");
    }
    Sequence seq = new Sequence(request);
    waiting.add(seq);
    byId.put(request.requestId(), seq);
    return seq;
  }

  /**
   * Keeps a request's blocks referenced after it finishes, so that its KV can be read (by a decode
   * worker pulling a prefill) until {@link #releaseRetained}.
   */
  public void retainOnFinish(String requestId) {
    if (!byId.containsKey(requestId)) {
      throw new IllegalArgumentException("no request " + requestId + " is queued or running");
    }
    retainOnFinish.add(requestId);
  }

  /** The finished, retained sequence of a request; null if none is retained under that id. */
  public Sequence retained(String requestId) {
    return retained.get(requestId);
  }

  /** Frees a retained sequence's blocks; false if none was retained under that id. */
  public boolean releaseRetained(String requestId) {
    Sequence seq = retained.remove(requestId);
    if (seq == null) {
      return false;
    }
    freeBlocks(seq);
    return true;
  }

  /**
   * Admits a request whose prompt KV are computed elsewhere. It reuses whatever prefix of the prompt
   * is cached here and allocates blocks for the rest; the caller fills blocks [{@link
   * Imported#cachedBlocks()}, {@link Sequence#blockCount()}) with the prompt's KV and then calls
   * {@link #commitImported} with the first token, or {@link #abort} to give the blocks back. Until
   * then the sequence is neither waiting nor running.
   *
   * @return null when the pool has no room now (nothing is allocated then)
   * @throws IllegalArgumentException if the request can never be served
   */
  public Imported addImported(EngineRequest request) {
    if (request.stop().maxTokens() < 2) {
      throw new IllegalArgumentException("an imported request must still have tokens to generate");
    }
    if (running.size() >= config.maxNumSeqs()) {
      return null;
    }
    Sequence seq = add(request);
    waiting.remove(seq);
    long[] hashes = seq.allFullBlockHashes(blockSize);
    int cachedBlocks = pool.cachedPrefixLength(hashes);
    int needed = ceilDiv(seq.promptLength);
    if (pool.availableBlocks() - pool.evictableAmong(hashes, cachedBlocks) < needed - cachedBlocks) {
      byId.remove(request.requestId());
      return null;
    }
    for (int id : pool.acquireCached(hashes, cachedBlocks)) {
      seq.addBlock(id);
    }
    seq.hashFullBlocks(cachedBlocks, blockSize);
    if (!reserveBlocks(seq, seq.promptLength)) {
      throw new IllegalStateException("block accounting is off: import could not allocate");
    }
    seq.cachedTokens = Math.min(cachedBlocks * blockSize, seq.promptLength);
    return new Imported(seq, cachedBlocks);
  }

  /**
   * Marks an imported sequence's prompt KV as present and lets it decode from the next step, with
   * {@code firstToken} already generated.
   */
  public void commitImported(Imported imported, int firstToken) {
    Sequence seq = imported.sequence();
    seq.computedTokens = seq.promptLength;
    commitFullBlocks(seq);
    seq.append(firstToken);
    running.add(seq);
  }

  /** The blocks of a queued or running request in position order; null if unknown. */
  public int[] blocksOf(String requestId) {
    Sequence seq = byId.get(requestId);
    return seq == null ? null : java.util.Arrays.copyOf(seq.blocks(), seq.blockCount());
  }

  /** A sequence admitted by {@link #addImported}, waiting for its KV. */
  public record Imported(Sequence sequence, int cachedBlocks) {}

  /** Removes a request wherever it is and frees its blocks; false if unknown. */
  public boolean abort(String requestId) {
    retainOnFinish.remove(requestId);
    if (releaseRetained(requestId)) {
      return true;
    }
    Sequence seq = byId.remove(requestId);
    if (seq == null) {
      return false;
    }
    if (!waiting.remove(seq)) {
      running.remove(seq);
    }
    freeBlocks(seq);
    return true;
  }

  public boolean hasWork() {
    return !waiting.isEmpty() || !running.isEmpty();
  }

  /** Picks this step's work and allocates its blocks; an empty batch when nothing can run. */
  public ScheduledBatch schedule() {
    List<Sequence> scheduled = new ArrayList<>();
    List<Integer> tokens = new ArrayList<>();
    int budget = config.maxBatchedTokens();
    boolean preempted = scheduleRunning(scheduled, tokens, budget);
    for (int n : tokens) {
      budget -= n;
    }
    if (!preempted) {
      admitWaiting(scheduled, tokens, budget);
    }
    return new ScheduledBatch(
        List.copyOf(scheduled), tokens.stream().mapToInt(Integer::intValue).toArray());
  }

  /**
   * Records that the batch's KV now exist, commits full blocks to the prefix cache, and draws a
   * token for every sequence the batch caught up. Finished sequences leave and free their blocks.
   */
  public List<RequestOutput> complete(ScheduledBatch batch, TokenDrawer drawer) {
    List<RequestOutput> outputs = new ArrayList<>();
    for (int i = 0; i < batch.size(); i++) {
      Sequence seq = batch.sequence(i);
      boolean draws = batch.drawsToken(i);
      seq.computedTokens += batch.tokens()[i];
      commitFullBlocks(seq);
      if (!draws) {
        continue; // chunked prefill not finished
      }
      int token = drawer.draw(i, seq);
      seq.append(token);
      FinishReason finish = finishReason(seq, token);
      TokenLogprob logprob = seq.takeDrawnLogprob();
      outputs.add(
          new RequestOutput(
              seq.id(), new int[] {token}, finish, seq.promptLength, seq.cachedTokens,
              logprob == null ? null : new TokenLogprob[] {logprob}, seq.takePromptLogprobs()));
      if (finish != null) {
        running.remove(seq);
        byId.remove(seq.id());
        if (retainOnFinish.remove(seq.id())) {
          retained.put(seq.id(), seq);
        } else {
          freeBlocks(seq);
        }
      }
    }
    return outputs;
  }

  public EngineLoad load() {
    long queued = 0;
    for (Sequence seq : waiting) {
      queued += seq.pendingTokens();
    }
    for (Sequence seq : running) {
      if (seq.inPrefill()) {
        queued += seq.pendingTokens();
      }
    }
    return new EngineLoad(
        running.size(),
        waiting.size(),
        queued,
        pool.usedBlocks(),
        pool.totalBlocks(),
        pool.lastEventId());
  }

  /** Schedules running sequences in order; returns true if it had to preempt one. */
  private boolean scheduleRunning(List<Sequence> scheduled, List<Integer> tokens, int budget) {
    boolean preempted = false;
    for (int i = 0; i < running.size() && budget > 0; i++) {
      Sequence seq = running.get(i);
      int n = Math.min(seq.pendingTokens(), budget);
      if (n <= 0) {
        continue;
      }
      boolean fits = true;
      while (!reserveBlocks(seq, seq.computedTokens + n)) {
        // Out of blocks: preempt the newest running sequence by recompute.
        Sequence victim = running.getLast();
        preempt(victim);
        preempted = true;
        if (victim == seq) {
          fits = false;
          break;
        }
      }
      if (!fits) {
        break;
      }
      scheduled.add(seq);
      tokens.add(n);
      budget -= n;
    }
    return preempted;
  }

  /** Admits waiting sequences while budget, blocks and max_num_seqs allow. */
  private void admitWaiting(List<Sequence> scheduled, List<Integer> tokens, int budget) {
    while (budget > 0 && !waiting.isEmpty() && running.size() < config.maxNumSeqs()) {
      Sequence seq = waiting.peek();
      long[] hashes = seq.allFullBlockHashes(blockSize);
      // Keep at least one token to compute so the next token can be drawn.
      // A request for the prompt's log-probabilities computes it all: cached blocks have no logits.
      int maxCachedBlocks = seq.request.sampling().wantsPromptLogprobs() ? 0 : (seq.length() - 1) / blockSize;
      int cachedBlocks = Math.min(pool.cachedPrefixLength(hashes), maxCachedBlocks);
      int cachedTokens = cachedBlocks * blockSize;
      int pending = seq.length() - cachedTokens;
      if (!config.chunkedPrefill() && pending > budget) {
        break;
      }
      int n = Math.min(pending, budget);
      int newBlocks = ceilDiv(cachedTokens + n) - cachedBlocks;
      // Cached blocks that are evictable stop being available once acquired.
      if (pool.availableBlocks() - pool.evictableAmong(hashes, cachedBlocks) < newBlocks) {
        break;
      }
      waiting.poll();
      for (int id : pool.acquireCached(hashes, cachedBlocks)) {
        seq.addBlock(id);
      }
      seq.hashFullBlocks(cachedBlocks, blockSize);
      seq.computedTokens = cachedTokens;
      if (seq.cachedTokens < 0) {
        seq.cachedTokens = cachedTokens;
      }
      if (!reserveBlocks(seq, cachedTokens + n)) {
        throw new IllegalStateException("block accounting is off: admission could not allocate");
      }
      running.add(seq);
      scheduled.add(seq);
      tokens.add(n);
      budget -= n;
    }
  }

  /** Ensures the sequence holds blocks for {@code tokens} tokens; false if the pool ran dry. */
  private boolean reserveBlocks(Sequence seq, int tokens) {
    int needed = ceilDiv(tokens);
    while (seq.blockCount() < needed) {
      int id = pool.allocate();
      if (id < 0) {
        return false;
      }
      seq.addBlock(id);
    }
    return true;
  }

  private void commitFullBlocks(Sequence seq) {
    int full = Math.min(seq.computedTokens, seq.length()) / blockSize;
    if (full > seq.hashedBlocks()) {
      int first = seq.hashFullBlocks(full, blockSize);
      pool.cache(seq.blocks(), seq.sequenceHashes(), seq.localHashes(), first, full);
    }
  }

  /** Sequences preempted by recompute so far. */
  public long preemptions() {
    return preemptions;
  }

  private void preempt(Sequence seq) {
    preemptions++;
    running.remove(seq);
    freeBlocks(seq);
    waiting.addFirst(seq);
  }

  private void freeBlocks(Sequence seq) {
    pool.releaseAll(seq.blocks(), seq.blockCount());
    seq.clearBlocks();
  }

  private FinishReason finishReason(Sequence seq, int token) {
    for (int stop : seq.request.stop().stopTokenIds()) {
      if (stop == token) {
        return FinishReason.STOP;
      }
    }
    if (!seq.request.stop().ignoreEos()) {
      for (int eos : config.eosTokenIds()) {
        if (eos == token) {
          return FinishReason.STOP;
        }
      }
    }
    if (seq.generated >= seq.request.stop().maxTokens() || seq.length() >= maxContextLength) {
      return FinishReason.LENGTH;
    }
    return null;
  }

  private int ceilDiv(long tokens) {
    return (int) ((tokens + blockSize - 1) / blockSize);
  }
}
