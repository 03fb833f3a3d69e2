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
  /** Gauge: tandem_frontend_waiting_requests (requests waiting for any worker to serve, e.g. a pool scaled to zero). */
  public static final String WAITING_REQUESTS = "tandem.frontend.waiting.requests";
  /** Gauge: tandem_frontend_inflight_requests. */
  public static final String INFLIGHT_REQUESTS = "tandem.frontend.inflight.requests";
  /** Counter, tag adapter: tandem_frontend_lora_requests_total, requests that named a LoRA adapter as their model. */
  public static final String LORA_REQUESTS = "tandem.frontend.lora.requests";
  /** Counter: tandem_frontend_input_tokens_total. */
  public static final String INPUT_TOKENS = "tandem.frontend.input.tokens";
  /** Counter: tandem_frontend_cached_tokens_total (prompt tokens served from a worker's cache). */
  public static final String CACHED_TOKENS = "tandem.frontend.cached.tokens";
  /**
   * Histogram: tandem_frontend_uncached_prompt_tokens, the prompt tokens each request had to compute
   * (prompt − cached), in {@link dev.tandem.common.PromptLengthBuckets}; the planner sizes the
   * prefill pool from it.
   */
  public static final String UNCACHED_PROMPT_TOKENS = "tandem.frontend.uncached.prompt";
  /** Counter: tandem_frontend_output_tokens_total. */
  public static final String OUTPUT_TOKENS = "tandem.frontend.output.tokens";
  /** Counter: tandem_frontend_client_disconnects_total (requests cancelled by the client). */
  public static final String CLIENT_DISCONNECTS = "tandem.frontend.client.disconnects";
  /** Gauge: tandem_router_kv_hit_rate, cached prompt tokens ÷ prompt tokens since start. */
  public static final String ROUTER_KV_HIT_RATE = "tandem.router.kv.hit.rate";
  /** Counter: requests sent for remote prefill that the decode worker prefilled itself (prefill worker failed). */
  public static final String REMOTE_PREFILL_FALLBACKS = "tandem.frontend.remote.prefill.fallbacks";
  /** Counter: tandem_frontend_migrations_total, choices moved to another worker after theirs failed mid-stream. */
  public static final String MIGRATIONS = "tandem.frontend.migrations";
}
