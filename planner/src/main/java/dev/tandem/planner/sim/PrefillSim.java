package dev.tandem.planner.sim;

import dev.tandem.common.WorkerId;
import dev.tandem.planner.Pool;
import dev.tandem.planner.Profile;
import dev.tandem.router.index.BlockHashIndex;

/**
 * A simulated prefill worker: one prompt at a time, first come first served, each taking the
 * profile's prefill time for its uncached tokens.
 */
final class PrefillSim extends SimWorker {
  private final Profile profile;
  private double busyUntil;
  private long queuedTokens;
  private int queued;

  PrefillSim(WorkerId id, int serial, double startedAt, double readyAt, BlockHashIndex index, Profile profile, int blockTokens) {
    super(id, serial, Pool.PREFILL, startedAt, readyAt, index, (int) (profile.kvTokens() / blockTokens));
    this.profile = profile;
  }

  /** Queues {@code r}'s {@code uncached} tokens; returns when its prefill ends. */
  double enqueue(SimRequest r, int uncached, double now) {
    double start = Math.max(now, busyUntil);
    busyUntil = start + profile.prefillSeconds(uncached);
    queuedTokens += uncached;
    queued++;
    return busyUntil;
  }

  /** {@code r}'s prefill ended: its blocks are cached here. */
  void finish(SimRequest r) {
    queuedTokens -= r.uncachedTokens;
    queued--;
    store(r.hashes);
  }

  long queuedTokens() {
    return queuedTokens;
  }

  @Override
  int inFlight() {
    return queued;
  }

  @Override
  long load() {
    return queuedTokens;
  }
}
