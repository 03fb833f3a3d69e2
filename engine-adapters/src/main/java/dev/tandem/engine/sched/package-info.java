/**
 * Continuous batching shared by every engine: {@link dev.tandem.engine.sched.Scheduler} keeps the
 * waiting and running sequences, admits them against a per-step token budget, KV blocks and
 * {@code max_num_seqs}, chunks long prefills, preempts by recompute when blocks run out, and turns
 * each drawn token into a {@link dev.tandem.engine.RequestOutput}. Engines supply the compute for
 * a {@link dev.tandem.engine.sched.ScheduledBatch} and the token each caught-up sequence draws.
 */
package dev.tandem.engine.sched;
