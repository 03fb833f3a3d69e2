package dev.tandem.router;

/**
 * The router's meter names, in Micrometer's dotted form (Prometheus shows {@code
 * tandem.router.kv.events.applied} as {@code tandem_router_kv_events_applied_total}). The {@code
 * tandem.worker.*} gauges are each worker's last load report as this router sees it, tagged {@code
 * worker} and {@code role}; workers serve their own meters on their metrics port.
 */
public final class MetricNames {
  private MetricNames() {}

  /** Prompt tokens the router expected the chosen worker to hold already (counter). */
  public static final String PREDICTED_OVERLAP = "tandem.router.predicted.overlap.tokens";
  /** KV events applied to the index (counter). */
  public static final String EVENTS_APPLIED = "tandem.router.kv.events.applied";
  /** Stored events whose parent block the index did not know (counter). */
  public static final String UNKNOWN_PARENTS = "tandem.router.kv.unknown.parents";
  /** Removed events for blocks the index did not know (counter). */
  public static final String UNKNOWN_REMOVALS = "tandem.router.kv.unknown.removals";
  /** Gaps in a worker's event ids (counter). */
  public static final String EVENT_GAPS = "tandem.router.kv.event.gaps";
  /** Snapshots taken to rebuild a worker's part of the index (counter). */
  public static final String SNAPSHOTS = "tandem.router.kv.snapshots";
  /** Blocks in the index (gauge). */
  public static final String INDEX_BLOCKS = "tandem.router.kv.index.blocks";
  /** 1 while a worker is reported for publishing no KV events (gauge, tag {@code worker}). */
  public static final String WORKER_MISSING_EVENTS = "tandem.router.worker.missing.kv.events";
  /** Requests a prefill worker could have taken, by {@code decision} split or local (counter). */
  public static final String DISAGG_DECISIONS = "tandem.router.disagg.decisions";
  /** Reservations opened and not yet released (gauge). */
  public static final String OPEN_RESERVATIONS = "tandem.router.open.reservations";
  /** A worker's running requests (gauge, tag {@code worker}). */
  public static final String WORKER_ACTIVE_REQUESTS = "tandem.worker.active.requests";
  /** A worker's requests waiting to be scheduled (gauge, tags {@code worker}, {@code role}). */
  public static final String WORKER_WAITING_REQUESTS = "tandem.worker.waiting.requests";
  /** Prompt tokens queued on a worker, not yet prefilled (gauge, tags {@code worker}, {@code role}). */
  public static final String WORKER_QUEUED_PREFILL_TOKENS = "tandem.worker.queued.prefill.tokens";
  /** A worker's KV blocks in use (gauge, tag {@code worker}). */
  public static final String WORKER_KV_BLOCKS_USED = "tandem.worker.kv.blocks.used";
  /** A worker's KV blocks in all (gauge, tag {@code worker}). */
  public static final String WORKER_KV_BLOCKS_TOTAL = "tandem.worker.kv.blocks.capacity";
  /** 1 while a worker's load stream is up (gauge, tag {@code worker}). */
  public static final String WORKER_REACHABLE = "tandem.worker.reachable";
  /** A worker's measured prefill speed at 512 tokens (gauge, tag {@code worker}). */
  public static final String WORKER_PREFILL_RATE = "tandem.worker.prefill.tokens.per.second";
  /** 1 while a worker reports that it is draining (gauge, tag {@code worker}). */
  public static final String WORKER_DRAINING = "tandem.worker.draining";
  /** Workers admitted to the pool, by role (gauge, tag {@code role}): the set discovery gave. */
  public static final String WORKERS = "tandem.router.workers";
  /** Workers that registered but were refused (gauge). */
  public static final String REFUSED_WORKERS = "tandem.router.refused.workers";
}
