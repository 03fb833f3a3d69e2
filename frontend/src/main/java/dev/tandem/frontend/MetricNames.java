package dev.tandem.frontend;

/**
 * Every metric the frontend publishes, in Micrometer's dotted form; Prometheus sees them as {@code
 * tandem_frontend_<name>_<unit>} ({@code _total} on counters only).
 */
public final class MetricNames {
  private MetricNames() {}

  /** Counter, tags endpoint and status: tandem_frontend_requests_total. */
  public static final String REQUESTS = "tandem.frontend.requests";
  /** Timer: tandem_frontend_time_to_first_token_seconds. */
  public static final String TIME_TO_FIRST_TOKEN = "tandem.frontend.time.to.first.token";
  /** Timer: tandem_frontend_inter_token_latency_seconds. */
  public static final String INTER_TOKEN_LATENCY = "tandem.frontend.inter.token.latency";
  /** Timer: tandem_frontend_request_duration_seconds. */
  public static final String REQUEST_DURATION = "tandem.frontend.request.duration";
  /** Gauge: tandem_frontend_inflight_requests. */
  public static final String INFLIGHT_REQUESTS = "tandem.frontend.inflight.requests";
  /** Counter: tandem_frontend_input_tokens_total. */
  public static final String INPUT_TOKENS = "tandem.frontend.input.tokens";
  /** Counter: tandem_frontend_cached_tokens_total (prompt tokens served from a worker's cache). */
  public static final String CACHED_TOKENS = "tandem.frontend.cached.tokens";
  /** Counter: tandem_frontend_output_tokens_total. */
  public static final String OUTPUT_TOKENS = "tandem.frontend.output.tokens";
  /** Counter: tandem_frontend_client_disconnects_total (requests cancelled by the client). */
  public static final String CLIENT_DISCONNECTS = "tandem.frontend.client.disconnects";
  /** Counter: tandem_router_predicted_overlap_tokens_total (prompt tokens the router expected cached). */
  public static final String ROUTER_PREDICTED_OVERLAP = "tandem.router.predicted.overlap.tokens";
  /** Gauge: tandem_router_kv_hit_rate, cached prompt tokens ÷ prompt tokens since start. */
  public static final String ROUTER_KV_HIT_RATE = "tandem.router.kv.hit.rate";
  /** Counter: tandem_router_kv_events_applied_total. */
  public static final String ROUTER_EVENTS_APPLIED = "tandem.router.kv.events.applied";
  /** Counter: tandem_router_kv_unknown_parents_total (stored events whose parent the worker was not known to hold). */
  public static final String ROUTER_UNKNOWN_PARENTS = "tandem.router.kv.unknown.parents";
  /** Counter: tandem_router_kv_unknown_removals_total. */
  public static final String ROUTER_UNKNOWN_REMOVALS = "tandem.router.kv.unknown.removals";
  /** Counter: tandem_router_kv_event_gaps_total (gaps that triggered a replay). */
  public static final String ROUTER_EVENT_GAPS = "tandem.router.kv.event.gaps";
  /** Counter: tandem_router_kv_snapshots_total. */
  public static final String ROUTER_SNAPSHOTS = "tandem.router.kv.snapshots";
  /** Gauge: tandem_router_kv_index_blocks. */
  public static final String ROUTER_INDEX_BLOCKS = "tandem.router.kv.index.blocks";
  /** Gauge, tag worker: tandem_router_worker_missing_kv_events, 1 while a worker is routed without events. */
  public static final String ROUTER_WORKER_MISSING_EVENTS = "tandem.router.worker.missing.kv.events";
  /** Gauge, tag worker: tandem_worker_active_requests as the worker last reported. */
  public static final String WORKER_ACTIVE_REQUESTS = "tandem.worker.active.requests";
  /** Gauge, tag worker: tandem_worker_kv_blocks_used. */
  public static final String WORKER_KV_BLOCKS_USED = "tandem.worker.kv.blocks.used";
  /** Gauge, tag worker: tandem_worker_kv_blocks_capacity (a gauge may not end in _total). */
  public static final String WORKER_KV_BLOCKS_TOTAL = "tandem.worker.kv.blocks.capacity";
  /** Gauge, tag worker: 1 while the worker's load stream is up. */
  public static final String WORKER_REACHABLE = "tandem.worker.reachable";
  /** Counter, tag decision (split|local): requests a prefill worker could have taken, by what the router decided. */
  public static final String ROUTER_DISAGG_DECISIONS = "tandem.router.disagg.decisions";
  /** Counter: requests sent for remote prefill that the decode worker prefilled itself (prefill worker failed). */
  public static final String REMOTE_PREFILL_FALLBACKS = "tandem.frontend.remote.prefill.fallbacks";
  /** Gauge, tag worker: prompt tokens per second the worker's prefill steps reached lately. */
  public static final String WORKER_PREFILL_RATE = "tandem.worker.prefill.tokens.per.second";
}
