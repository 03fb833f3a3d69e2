package dev.tandem.engine.sched;

import dev.tandem.common.FinishReason;
import dev.tandem.common.TokenLogprob;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.SpeculationCounts;
import dev.tandem.engine.kv.BlockPool;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Continuous batching over a {@link BlockPool}: running sequences first (decode and unfinished
 * prefill chunks), then waiting ones in arrival order while the token budget, free blocks and
 * {@code max_num_seqs} allow. A waiting sequence reuses the longest cached prefix of its full
 * blocks. When blocks run out, the newest running sequence is preempted by recompute (its blocks
 * are freed; it goes back to the head of the queue). {@link #orderByPriority By priority} (vLLM's
 * {@code --scheduling-policy priority}) the queue is ordered by each request's priority (lower
 * first), then arrival, and the preempted one is the running sequence last in that order. Full
 * blocks are committed to the prefix cache as soon as their KV exist. With {@link #speculate speculation} on, a decoding sequence also runs
 * the tokens its n-gram lookup proposes, with the budget and free blocks left once everything else
 * is scheduled (it never preempts or delays another sequence), and keeps them as far as the tokens
 * drawn from the model agree; how much a sequence proposes next follows what it kept ({@link
 * Sequence#endVerification}).
 *
 * <p>One algorithm (admission, chunking, preemption and completion of one step), about 400 lines.
 *
 * <p>Threading: owned by the engine thread; not thread-safe.
 */
public final class Scheduler {
  /**
   * Draws a token of entry {@code index} of the batch just computed from the logits after its
   * {@code row}-th token of the step (0 unless the entry verifies proposed tokens: then row r
   * follows the r-th of them and {@code draft} is the token proposed there, -1 past the last).
   * Where the token drawn is not {@code draft}, the rest of the proposal is dropped.
   */
  @FunctionalInterface
  public interface TokenDrawer {
    int draw(int index, int row, int draft, Sequence sequence);
  }

  private final SchedulerConfig config;
  private final BlockPool pool;
  private final int blockSize;
  private final int maxContextLength;
  private final java.util.LinkedList<Sequence> waiting = new java.util.LinkedList<>();
  private boolean byPriority;
  private final List<Sequence> running = new ArrayList<>();
  private final Map<String, Sequence> byId = new HashMap<>();
  private final java.util.Set<String> retainOnFinish = new java.util.HashSet<>();
  private final Map<String, Sequence> retained = new HashMap<>();
  private long preemptions;
  private SpeculativeConfig speculation = SpeculativeConfig.OFF;
  private java.util.function.Predicate<Sequence> speculates = seq -> false;
  private int[] draftScratch = new int[0];
  private DraftCheck draftCheck = (seq, proposal, count) -> count;
  private long draftedTokens;
  private long acceptedTokens;

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

  /**
   * Turns speculation on for the decoding sequences {@code eligible} accepts (an engine may leave
   * out what it cannot verify token by token); every proposal is verified whole.
   */
  public void speculate(SpeculativeConfig config, java.util.function.Predicate<Sequence> eligible) {
    speculate(config, eligible, (seq, proposal, count) -> count);
  }

  /** As {@link #speculate(SpeculativeConfig, java.util.function.Predicate)}, each proposal cut where {@code check} says. */
  public void speculate(SpeculativeConfig config, java.util.function.Predicate<Sequence> eligible, DraftCheck check) {
    this.speculation = config;
    this.speculates = eligible;
    this.draftCheck = check;
    this.draftScratch = new int[config.tokens()];
  }

  /**
   * How many leading tokens of a proposal for {@code seq} are worth verifying (0..{@code count}):
   * an engine cuts a proposal where it could not be kept anyway (a constrained output's grammar).
   */
  @FunctionalInterface
  public interface DraftCheck {
    int usable(Sequence seq, int[] proposal, int count);
  }

  /** Tokens proposed and run for verification so far, and how many of them were kept. */
  public SpeculationCounts speculationCounts() {
    return new SpeculationCounts(draftedTokens, acceptedTokens);
  }

  /** The batching limits, as routers see them. */
  public dev.tandem.engine.EngineInfo.Batching batching() {
    return new dev.tandem.engine.EngineInfo.Batching(config.maxNumSeqs(), config.maxBatchedTokens());
  }

  /** The context limit actually enforced: the configured one, or what the whole pool holds. */
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
    enqueue(seq, false);
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

  /**
   * How many requests run with LoRA adapter {@code loraName}: queued, running, waiting for imported
   * KV, or finished with their blocks retained.
   */
  public int requestsWith(String loraName) {
    int n = 0;
    for (Sequence seq : byId.values()) {
      n += loraName.equals(seq.request().loraName()) ? 1 : 0;
    }
    for (Sequence seq : retained.values()) {
      n += loraName.equals(seq.request().loraName()) ? 1 : 0;
    }
    return n;
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
      budget = admitWaiting(scheduled, tokens, budget);
    }
    if (speculation.enabled()) {
      addDrafts(scheduled, tokens, budget);
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
      int drafts = seq.drafts();
      seq.computedTokens += batch.tokens()[i] - drafts; // a proposed token's KV count once it is kept
      if (!draws) {
        commitFullBlocks(seq);
        continue; // chunked prefill not finished
      }
      int[] drawn = new int[1 + drafts];
      TokenLogprob[] logprobs = null;
      FinishReason finish = null;
      int count = 0;
      int kept = 0;
      while (true) {
        int draft = count < drafts ? seq.tokens()[seq.length()] : -1; // read before append overwrites it
        int token = drawer.draw(i, count, draft, seq);
        seq.append(token);
        TokenLogprob logprob = seq.takeDrawnLogprob();
        if (logprob != null) {
          logprobs = logprobs == null ? new TokenLogprob[drawn.length] : logprobs;
          logprobs[count] = logprob;
        }
        drawn[count++] = token;
        finish = finishReason(seq, token);
        if (token != draft) {
          break;
        }
        kept++;
        if (finish != null) {
          break;
        }
        seq.computedTokens++; // the proposed token is kept, and its KV were computed this step
      }
      if (drafts > 0) {
        seq.endVerification(kept, speculation.tokens());
        acceptedTokens += kept;
        releaseBlocksPast(seq, ceilDiv(seq.length())); // a rejected proposal's blocks
      }
      commitFullBlocks(seq);
      outputs.add(
          new RequestOutput(
              seq.id(), count == drawn.length ? drawn : java.util.Arrays.copyOf(drawn, count), finish, seq.promptLength,
              seq.cachedTokens, logprobs == null ? null : java.util.Arrays.copyOf(logprobs, count), seq.takePromptLogprobs(),
              seq.takeEmbedding()));
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
        // Out of blocks: preempt the newest running sequence (by priority: the last in queue order) by recompute.
        Sequence victim = byPriority ? running.stream().max(QUEUE_ORDER).orElseThrow() : running.getLast();
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

  /**
   * Adds proposed tokens to the scheduled decode steps of eligible sequences, within the budget
   * left and the blocks free now (so that it takes nothing another sequence needs this step).
   */
  private void addDrafts(List<Sequence> scheduled, List<Integer> tokens, int budget) {
    for (int i = 0; i < scheduled.size() && budget > 0; i++) {
      Sequence seq = scheduled.get(i);
      int n = tokens.get(i);
      if (seq.inPrefill() || n != 1 || seq.pendingTokens() != 1 || !speculates.test(seq) || !seq.mayPropose()) {
        continue;
      }
      int computeTo = seq.computedTokens + 1;
      int roomInBlocks = (seq.blockCount() + pool.availableBlocks()) * blockSize - computeTo;
      // Every kept token and the one drawn after them must fit the request's max_tokens and the context.
      int max = Math.min(Math.min(Math.min(speculation.tokens(), seq.draftLimit()), budget),
          Math.min(roomInBlocks, Math.min(seq.request.stop().maxTokens() - seq.generated - 1, maxContextLength - seq.length() - 1)));
      if (max <= 0) {
        continue;
      }
      int k = seq.propose(speculation, max, draftScratch);
      if (k > 0) {
        k = seq.cutProposal(draftCheck.usable(seq, draftScratch, k));
      }
      if (k == 0) {
        continue;
      }
      if (!reserveBlocks(seq, computeTo + k)) {
        throw new IllegalStateException("block accounting is off: proposed tokens could not allocate");
      }
      tokens.set(i, 1 + k);
      budget -= k;
      draftedTokens += k;
    }
  }

  /** Admits waiting sequences while budget, blocks and max_num_seqs allow; returns the budget left. */
  private int admitWaiting(List<Sequence> scheduled, List<Integer> tokens, int budget) {
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
    return budget;
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
      pool.cache(seq.blocks(), seq.sequenceHashes(), seq.localHashes(), first, full, seq.request().adapterSalt());
    }
  }

  /** Priority before arrival (vLLM's: a lower value first). */
  private static final java.util.Comparator<Sequence> QUEUE_ORDER =
      java.util.Comparator.<Sequence>comparingInt(s -> s.request.priority()).thenComparingLong(s -> s.arrival);

  /**
   * From now on the waiting queue is ordered by each request's priority, lower first, then by
   * arrival, and preemption takes the running sequence last in that order (vLLM's {@code
   * --scheduling-policy priority}); before, first come, first served.
   */
  public void orderByPriority() {
    byPriority = true;
    waiting.sort(QUEUE_ORDER);
  }

  public boolean ordersByPriority() {
    return byPriority;
  }

  /** Queues a sequence: at the back, or ({@code preempted}) the front; by priority, at its place in queue order. */
  private void enqueue(Sequence seq, boolean preempted) {
    if (!byPriority) {
      if (preempted) {
        waiting.addFirst(seq);
      } else {
        waiting.addLast(seq);
      }
      return;
    }
    var it = waiting.listIterator();
    while (it.hasNext()) {
      if (QUEUE_ORDER.compare(it.next(), seq) > 0) {
        it.previous();
        break;
      }
    }
    it.add(seq);
  }

  /** Sequences preempted by recompute so far. */
  public long preemptions() {
    return preemptions;
  }

  private void preempt(Sequence seq) {
    preemptions++;
    running.remove(seq);
    freeBlocks(seq);
    enqueue(seq, true);
  }

  /** Returns the blocks a sequence holds beyond its first {@code keep} (never committed ones). */
  private void releaseBlocksPast(Sequence seq, int keep) {
    int count = seq.blockCount() - keep;
    if (count > 0) {
      pool.releaseAll(java.util.Arrays.copyOfRange(seq.blocks(), keep, seq.blockCount()), count);
      seq.truncateBlocks(keep);
    }
  }

  private void freeBlocks(Sequence seq) {
    pool.releaseAll(seq.blocks(), seq.blockCount());
    seq.clearBlocks();
  }

  private FinishReason finishReason(Sequence seq, int token) {
    if (seq.request.stop().endsAt(token, seq.generated, config.eosTokenIds())) {
      return FinishReason.STOP;
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
