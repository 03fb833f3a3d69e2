package dev.tandem.router;

/**
 * Where the router sent one request, before it is started: the worker's expected prefix overlap
 * and, when a prefill worker could have taken it, the split decision. The load is reserved from the
 * moment the route exists: {@link #start} hands the reservation to the generation (which gives it
 * back when the request ends), {@link #release} gives it back if the request is never started.
 */
public interface Route {
  /** The worker that generates (the decode worker of a split request). */
  dev.tandem.common.WorkerId worker();

  /** Blocks of the prompt the router expects the chosen worker to hold already. */
  int predictedOverlapBlocks();

  /**
   * The cost the router minimised for the chosen worker: in kv mode with the seconds cost, its
   * predicted time to first token; with the block cost, blocks; NaN for load-only modes.
   */
  double predictedCost();

  /** {@code seconds}, {@code blocks}, or empty for load-only modes. */
  String costName();

  /** The split decision, or null when there was nothing to decide. */
  SplitPolicy.Decision decision();

  /** Sends the request; {@code listener} hears its chunks. */
  Generation start(TokenListener listener);

  /** Gives the reservation back without sending anything. */
  void release();
}
