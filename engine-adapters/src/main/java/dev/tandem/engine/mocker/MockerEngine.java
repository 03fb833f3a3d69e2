package dev.tandem.engine.mocker;

import dev.tandem.common.KvEvent;
import dev.tandem.common.TokenIds;
import dev.tandem.engine.Engine;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.KvEventSink;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.kv.BlockPool;
import dev.tandem.engine.sched.ScheduledBatch;
import dev.tandem.engine.sched.Scheduler;
import dev.tandem.engine.sched.SchedulerConfig;
import dev.tandem.engine.sched.SchedulingEngine;
import dev.tandem.engine.sched.Sequence;
import java.util.EnumSet;
import java.util.List;
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
 * with a seed are reproducible; without a seed they differ run to run. A migrated stream's output
 * so far ({@code resumedOutputTokens}) is not hashed as prompt, so it goes on as it would have on
 * its first worker. There are no logits, so
 * top-p, top-k and temperature change nothing but greedy vs sampled, and logprobs and penalties are
 * not offered (the frontend refuses them).
 *
 * <p>Threading: owned by one thread (see {@link Engine}).
 */
public final class MockerEngine extends SchedulingEngine {
  private final MockerConfig config;
  private final EngineInfo info;

  public MockerEngine(MockerConfig config) {
    super(
        new Scheduler(
            new SchedulerConfig(
                config.maxNumSeqs(),
                config.maxBatchedTokens(),
                config.chunkedPrefill(),
                config.maxContextLength(),
                config.eosTokenIds()),
            new BlockPool(config.totalKvBlocks(), config.blockSize())));
    this.config = config;
    this.info =
        new EngineInfo(
            "mocker",
            config.modelName(),
            config.blockSize(),
            config.totalKvBlocks(),
            config.vocabSize(),
            scheduler.maxContextLength(),
            config.kvBytesPerToken(),
            "", // the mocker stores no KV: nothing to pair on
            EnumSet.of(
                EngineInfo.Feature.TEMPERATURE,
                EngineInfo.Feature.TOP_P,
                EngineInfo.Feature.TOP_K,
                EngineInfo.Feature.SEED,
                EngineInfo.Feature.STOP_TOKEN_IDS,
                EngineInfo.Feature.MIN_TOKENS,
                EngineInfo.Feature.ALLOWED_TOKEN_IDS,
                EngineInfo.Feature.BAD_WORDS,
                EngineInfo.Feature.CACHE_SALT),
            config.eosTokenIds(),
            scheduler.batching());
  }

  @Override
  public EngineInfo info() {
    return described(info);
  }

  @Override
  public void add(EngineRequest request) {
    if (request.loraName() != null) {
      throw new IllegalArgumentException("LoRA adapter '" + request.loraName() + "': the mocker has no weights to adapt");
    }
    if (request.embed()) {
      throw new IllegalArgumentException("embeddings: the mocker has no hidden states");
    }
    Sequence seq = scheduler.add(request);
    long seed =
        request.sampling().isGreedy()
            ? 0x9E3779B97F4A7C15L
            : request.sampling().seed().orElseGet(() -> ThreadLocalRandom.current().nextLong());
    int[] prompt = request.promptTokens(); // a migrated stream's output so far is not its prompt
    seq.setEngineState(mix(seed ^ promptHash(prompt, prompt.length - request.resumedOutputTokens())));
  }

  @Override
  protected List<RequestOutput> run(ScheduledBatch batch) {
    // The time this batch would take on the modelled device.
    long prefillTokens = 0;
    int decoding = 0;
    for (int i = 0; i < batch.size(); i++) {
      if (batch.sequence(i).inPrefill()) {
        prefillTokens += batch.tokens()[i];
      } else {
        decoding++;
      }
    }
    BlockPool pool = scheduler.pool();
    double used = (double) pool.usedBlocks() / pool.totalBlocks();
    sleepFor(config.timing().stepNanos(prefillTokens, decoding, used));
    return scheduler.complete(batch, (i, row, draft, seq) -> drawToken(seq));
  }

  /** Sleeps the whole modelled step: an unpark (a new request arriving) must not shorten it. */
  private static void sleepFor(long nanos) {
    long deadline = System.nanoTime() + nanos;
    for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  /** The mocker draws regular tokens only, never end-of-sequence: only a request's stop ids can end it early. */
  private static final int[] NO_EOS = {};

  private int drawToken(Sequence seq) {
    long drawSeed = seq.<Long>engineState();
    long h = mix(drawSeed + 0x632BE59BD9B4E019L * seq.length());
    var allowed = seq.request().sampling().allowedTokenIds();
    int token = tokenOf(h, allowed);
    var stop = seq.request().stop();
    int[] banned = seq.badWordEnds();
    // min_tokens and bad_words: draw again (bounded: bans covering every token cannot be honoured)
    for (int tries = 0; tries < 1_000
        && ((!stop.mayStopAfter(seq.generated()) && stop.isEnd(token, NO_EOS)) || TokenIds.contains(banned, token)); tries++) {
      h = mix(h);
      token = tokenOf(h, allowed);
    }
    return token;
  }


  /** The token a draw {@code h} picks: among the regular tokens, or only among {@code allowed} (vLLM's allowed_token_ids). */
  private int tokenOf(long h, java.util.List<Integer> allowed) {
    return allowed.isEmpty() ? (int) Long.remainderUnsigned(h, config.regularVocabSize())
        : allowed.get((int) Long.remainderUnsigned(h, allowed.size()));
  }

  private static long promptHash(int[] tokens, int length) {
    long h = 0xCBF29CE484222325L;
    for (int i = 0; i < length; i++) {
      h = mix(h ^ tokens[i]);
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
