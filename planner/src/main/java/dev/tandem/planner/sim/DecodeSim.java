package dev.tandem.planner.sim;

import dev.tandem.common.WorkerId;
import dev.tandem.planner.Pool;
import dev.tandem.planner.Profile;
import dev.tandem.router.index.BlockHashIndex;
import java.util.ArrayDeque;
import java.util.PriorityQueue;

/**
 * A simulated decode worker. Its running streams advance together, one token each per step,
 * a step lasting the profile's ITL at the current batch and mean context; so rather than one
 * event per token the worker keeps a token counter ({@code progress}) advancing at 1 ÷ ITL and
 * each stream ends when the counter reaches its target. A prompt prefilled here (not split)
 * stalls every stream for its prefill time. Streams that do not fit (batch limit, KV) wait. The
 * gaps between tokens go to a listener as they pass (each step's length, times the streams in it;
 * a stall, one longer gap each; a stream's wait for a slot after its first token, one gap), as a
 * frontend records them.
 */
final class DecodeSim extends SimWorker {
  private final Profile profile;
  private final PriorityQueue<SimRequest> running = new PriorityQueue<>((a, b) -> Double.compare(a.target, b.target));
  private final ArrayDeque<SimRequest> waiting = new ArrayDeque<>();
  private final long kvTokens;
  private double progress;
  private double lastUpdate;
  private double stallUntil;
  private double itl;
  private long usedTokens;
  private double contextSum;
  private int reserved; // routed here, first token not yet in
  private long localPrefillTokens;
  /** The simulator's stamp on this worker's pending completion event; older events are stale. */
  long version;
  private final Gaps gaps;

  /** Hears inter-token gaps: {@code count} of them, {@code seconds} long each. */
  @FunctionalInterface
  interface Gaps {
    void observe(double seconds, double count);
  }

  DecodeSim(WorkerId id, int serial, double startedAt, double readyAt, BlockHashIndex index, Profile profile, int blockTokens,
      Gaps gaps) {
    super(id, serial, Pool.DECODE, startedAt, readyAt, index, (int) (profile.kvTokens() / blockTokens));
    this.profile = profile;
    this.kvTokens = profile.kvTokens();
    this.gaps = gaps;
  }

  /** Brings the token counter to {@code now} (no progress while stalled by a local prefill). */
  void advance(double now) {
    double from = Math.max(lastUpdate, stallUntil);
    if (now > from && !running.isEmpty()) {
      double steps = (now - from) / itl;
      progress += steps;
      gaps.observe(itl, steps * running.size());
    }
    lastUpdate = Math.max(lastUpdate, now);
  }

  /** A request routed here; its KV is reserved until it finishes. */
  void reserve() {
    reserved++;
  }

  /**
   * Prefills {@code r} here: every stream waits; returns when its first token is out.
   */
  double prefillLocally(SimRequest r, double now) {
    advance(now);
    double begin = Math.max(now, stallUntil);
    double stall = profile.prefillSeconds(r.uncachedTokens);
    stallUntil = begin + stall;
    if (!running.isEmpty()) {
      gaps.observe(stall + itl, running.size()); // each stream's next gap waits out the prefill
    }
    localPrefillTokens += r.uncachedTokens;
    return stallUntil;
  }

  void localPrefillDone(SimRequest r) {
    localPrefillTokens -= r.uncachedTokens;
  }

  /** {@code r}'s first token is in: it starts decoding, or waits for room. */
  void join(SimRequest r, double now) {
    advance(now);
    reserved--;
    store(r.hashes);
    if (running.size() < profile.maxNumSeqs() && (running.isEmpty() || usedTokens + r.kvTokens() <= kvTokens)) {
      start(r);
    } else {
      waiting.add(r);
    }
  }

  private void start(SimRequest r) {
    r.target = progress + Math.max(0, r.osl() - 1);
    running.add(r);
    usedTokens += r.kvTokens();
    contextSum += r.isl() + r.osl() / 2.0;
    retime();
  }

  private void retime() {
    int b = running.size();
    itl = b == 0 ? 0 : profile.itl(b, contextSum / b);
  }

  /** When the next stream ends, or NaN with none running. */
  double nextCompletion(double now) {
    SimRequest first = running.peek();
    if (first == null) {
      return Double.NaN;
    }
    return Math.max(Math.max(now, stallUntil), lastUpdate) + Math.max(0, first.target - progress) * itl;
  }

  /** Ends every stream whose last token is out by {@code now}; {@code done} hears each. */
  void complete(double now, java.util.function.Consumer<SimRequest> done) {
    advance(now);
    boolean changed = false;
    while (!running.isEmpty() && running.peek().target <= progress + 1e-9) {
      SimRequest r = running.poll();
      usedTokens -= r.kvTokens();
      contextSum -= r.isl() + r.osl() / 2.0;
      r.doneAt = now;
      changed = true;
      done.accept(r);
    }
    while (!waiting.isEmpty() && running.size() < profile.maxNumSeqs()
        && (running.isEmpty() || usedTokens + waiting.peek().kvTokens() <= kvTokens)) {
      SimRequest r = waiting.poll();
      gaps.observe(now - r.firstTokenAt, 1); // its next token waited for the slot: the frontend sees one long gap
      start(r);
      changed = true;
    }
    if (changed) {
      retime();
    }
  }

  int running() {
    return running.size();
  }

  double kvUsage() {
    return (double) usedTokens / kvTokens;
  }

  long localPrefillTokens() {
    return localPrefillTokens;
  }

  double currentItl() {
    return itl;
  }

  @Override
  int inFlight() {
    return running.size() + waiting.size() + reserved;
  }

  @Override
  long load() {
    return inFlight();
  }
}
