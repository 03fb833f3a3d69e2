package dev.tandem.engine.mocker;

import dev.tandem.common.KvEvent;
import dev.tandem.engine.Engine;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvEventSink;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.RequestOutput.FinishReason;
import dev.tandem.engine.kv.BlockPool;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * An engine that is honest about everything but compute: a real paged block pool with prefix reuse
 * and LRU eviction, real KV events, continuous batching with a per-step token budget, chunked
 * prefill and {@code max_num_seqs}, preemption by recompute when blocks run out — and a timing
 * model in place of the model. Each step sleeps for the time the model says it would take.
 *
 * <p>Output tokens are drawn from the regular vocabulary by a hash of (seed, prompt, position):
 * greedy requests (temperature 0) produce the same tokens for the same prompt; sampled requests
 * with a seed are reproducible; without a seed they differ run to run. There are no logits, so
 * top-p, top-k and temperature change nothing but greedy vs sampled, and logprobs and penalties are
 * not offered (the frontend refuses them).
 *
 * <p>Threading: owned by one thread (see {@link Engine}).
 */
public final class MockerEngine implements Engine {
  private final MockerConfig config;
  private final BlockPool pool;
  private final EngineInfo info;
  private final ArrayDeque<MockSequence> waiting = new ArrayDeque<>();
  private final List<MockSequence> running = new ArrayList<>();
  private final Map<String, MockSequence> byId = new HashMap<>();
  private final int maxContextLength;

  public MockerEngine(MockerConfig config) {
    this.config = config;
    this.pool = new BlockPool(config.totalKvBlocks(), config.blockSize());
    // Like vLLM, never admit a context the whole pool could not hold: a lone sequence always fits.
    this.maxContextLength =
        (int) Math.min(config.maxContextLength(), (long) config.totalKvBlocks() * config.blockSize());
    this.info =
        new EngineInfo(
            "mocker",
            config.modelName(),
            config.blockSize(),
            config.totalKvBlocks(),
            config.vocabSize(),
            maxContextLength,
            config.kvBytesPerToken(),
            EnumSet.of(
                EngineInfo.Feature.TEMPERATURE,
                EngineInfo.Feature.TOP_P,
                EngineInfo.Feature.TOP_K,
                EngineInfo.Feature.SEED,
                EngineInfo.Feature.STOP_TOKEN_IDS),
            config.eosTokenIds());
  }

  @Override
  public EngineInfo info() {
    return info;
  }

  @Override
  public void setEventSink(KvEventSink sink) {
    pool.setEventSink(sink);
  }

  /** The block pool, for tests that assert it returns to full. */
  public BlockPool pool() {
    return pool;
  }

  @Override
  public void add(EngineRequest request) {
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
    long seed =
        request.sampling().isGreedy()
            ? 0x9E3779B97F4A7C15L
            : request.sampling().seed().orElseGet(() -> ThreadLocalRandom.current().nextLong());
    MockSequence seq = new MockSequence(request, mix(seed ^ promptHash(request.promptTokens())));
    waiting.add(seq);
    byId.put(request.requestId(), seq);
  }

  @Override
  public boolean abort(String requestId) {
    MockSequence seq = byId.remove(requestId);
    if (seq == null) {
      return false;
    }
    if (!waiting.remove(seq)) {
      running.remove(seq);
    }
    freeBlocks(seq);
    return true;
  }

  @Override
  public boolean hasWork() {
    return !waiting.isEmpty() || !running.isEmpty();
  }

  @Override
  public List<RequestOutput> step() {
    List<MockSequence> scheduled = new ArrayList<>();
    List<Integer> scheduledTokens = new ArrayList<>();
    int budget = config.maxBatchedTokens();
    boolean preempted = scheduleRunning(scheduled, scheduledTokens, budget);
    for (int n : scheduledTokens) {
      budget -= n;
    }
    if (!preempted) {
      budget = admitWaiting(scheduled, scheduledTokens, budget);
    }
    if (scheduled.isEmpty()) {
      return List.of();
    }

    // The time this batch would take on the modelled device.
    long prefillTokens = 0;
    int decoding = 0;
    for (int i = 0; i < scheduled.size(); i++) {
      if (scheduled.get(i).inPrefill()) {
        prefillTokens += scheduledTokens.get(i);
      } else {
        decoding++;
      }
    }
    double used = (double) pool.usedBlocks() / pool.totalBlocks();
    sleepFor(config.timing().stepNanos(prefillTokens, decoding, used));

    // Advance every scheduled sequence; those caught up draw their next token.
    List<RequestOutput> outputs = new ArrayList<>();
    for (int i = 0; i < scheduled.size(); i++) {
      MockSequence seq = scheduled.get(i);
      seq.computedTokens += scheduledTokens.get(i);
      commitFullBlocks(seq);
      if (seq.pendingTokens() > 0) {
        continue; // chunked prefill not finished
      }
      int token = drawToken(seq);
      seq.append(token);
      FinishReason finish = finishReason(seq, token);
      outputs.add(
          new RequestOutput(seq.id(), new int[] {token}, finish, seq.promptLength, seq.cachedTokens));
      if (finish != null) {
        running.remove(seq);
        byId.remove(seq.id());
        freeBlocks(seq);
      }
    }
    return outputs;
  }

  @Override
  public EngineLoad load() {
    long queued = 0;
    for (MockSequence seq : waiting) {
      queued += seq.pendingTokens();
    }
    for (MockSequence seq : running) {
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

  @Override
  public List<KvEvent> cacheSnapshot() {
    return pool.snapshot();
  }

  /** Sleeps the whole modelled step: an unpark (a new request arriving) must not shorten it. */
  private static void sleepFor(long nanos) {
    long deadline = System.nanoTime() + nanos;
    for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  /** Schedules running sequences in order; returns true if it had to preempt one. */
  private boolean scheduleRunning(
      List<MockSequence> scheduled, List<Integer> tokens, int budget) {
    boolean preempted = false;
    for (int i = 0; i < running.size() && budget > 0; i++) {
      MockSequence seq = running.get(i);
      int n = Math.min(seq.pendingTokens(), budget);
      if (n <= 0) {
        continue;
      }
      boolean fits = true;
      while (!reserveBlocks(seq, seq.computedTokens + n)) {
        // Out of blocks: preempt the newest running sequence by recompute.
        MockSequence victim = running.getLast();
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

  /** Admits waiting sequences while budget, blocks and max_num_seqs allow; returns the budget left. */
  private int admitWaiting(List<MockSequence> scheduled, List<Integer> tokens, int budget) {
    while (budget > 0 && !waiting.isEmpty() && running.size() < config.maxNumSeqs()) {
      MockSequence seq = waiting.peek();
      long[] hashes = seq.allFullBlockHashes(config.blockSize());
      // Keep at least one token to compute so the next token can be drawn.
      int maxCachedBlocks = (seq.length() - 1) / config.blockSize();
      int cachedBlocks = Math.min(pool.cachedPrefixLength(hashes), maxCachedBlocks);
      int cachedTokens = cachedBlocks * config.blockSize();
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
      seq.hashFullBlocks(cachedBlocks, config.blockSize());
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
  private boolean reserveBlocks(MockSequence seq, int tokens) {
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

  private void commitFullBlocks(MockSequence seq) {
    int full = Math.min(seq.computedTokens, seq.length()) / config.blockSize();
    if (full > seq.hashedBlocks()) {
      int first = seq.hashFullBlocks(full, config.blockSize());
      pool.cache(seq.blocks(), seq.sequenceHashes(), seq.localHashes(), first, full);
    }
  }

  private void preempt(MockSequence seq) {
    running.remove(seq);
    freeBlocks(seq);
    waiting.addFirst(seq);
  }

  private void freeBlocks(MockSequence seq) {
    pool.releaseAll(seq.blocks(), seq.blockCount());
    seq.clearBlocks();
  }

  private FinishReason finishReason(MockSequence seq, int token) {
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
    if (seq.generated >= seq.request.stop().maxTokens()
        || seq.length() >= maxContextLength) {
      return FinishReason.LENGTH;
    }
    return null;
  }

  private int drawToken(MockSequence seq) {
    long h = mix(seq.drawSeed + 0x632BE59BD9B4E019L * seq.length());
    return (int) Long.remainderUnsigned(h, config.regularVocabSize());
  }

  private int ceilDiv(long tokens) {
    return (int) ((tokens + config.blockSize() - 1) / config.blockSize());
  }

  private static long promptHash(int[] tokens) {
    long h = 0xCBF29CE484222325L;
    for (int t : tokens) {
      h = mix(h ^ t);
    }
    return h;
  }

  /** SplitMix64's finaliser. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

}
