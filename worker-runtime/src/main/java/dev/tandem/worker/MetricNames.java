package dev.tandem.worker;

/**
 * A worker's own meters, in Micrometer's dotted form, each tagged {@code worker}. Prometheus shows
 * {@code tandem.worker.engine.step} as {@code tandem_worker_engine_step_seconds_count/_sum/_max}.
 * (The router's view of a worker, from its load reports, is {@code tandem.worker.*} without
 * {@code engine}: see the router's MetricNames.)
 */
public final class MetricNames {
  private MetricNames() {}

  /** Engine steps and the time they took (function timer). */
  public static final String ENGINE_STEP = "tandem.worker.engine.step";
  /** Request outputs produced, summed over steps: with ENGINE_STEP's count, the mean batch size (counter). */
  public static final String ENGINE_STEP_OUTPUTS = "tandem.worker.engine.step.outputs";
  /** Outputs of the last step: the batch size now (gauge). */
  public static final String ENGINE_BATCH_SIZE = "tandem.worker.engine.batch.size";
  /** Requests running in the engine (gauge). */
  public static final String ENGINE_RUNNING = "tandem.worker.engine.running.requests";
  /** Requests queued, waiting for a batch slot (gauge). */
  public static final String ENGINE_WAITING = "tandem.worker.engine.waiting.requests";
  /** Prompt tokens queued for prefill (gauge). */
  public static final String ENGINE_QUEUED_PREFILL_TOKENS = "tandem.worker.engine.queued.prefill.tokens";
  /** KV blocks in use (gauge). */
  public static final String ENGINE_KV_BLOCKS_USED = "tandem.worker.engine.kv.blocks.used";
  /** KV blocks in all (gauge). */
  public static final String ENGINE_KV_BLOCKS_TOTAL = "tandem.worker.engine.kv.blocks.capacity";
  /** Measured prefill speed at 512 tokens (gauge; 0 until measured). */
  public static final String ENGINE_PREFILL_RATE = "tandem.worker.engine.prefill.tokens.per.second";
  /** Tokens proposed by speculative decoding and run through the model for verification (counter). */
  public static final String ENGINE_SPEC_DRAFT_TOKENS = "tandem.worker.engine.spec.decode.draft.tokens";
  /** Proposed tokens kept because the model drew the same token (counter; ÷ draft tokens: the acceptance rate). */
  public static final String ENGINE_SPEC_ACCEPTED_TOKENS = "tandem.worker.engine.spec.decode.accepted.tokens";
  /** KV bytes pulled from prefill workers (counter). */
  public static final String KV_TRANSFER_BYTES = "tandem.worker.kv.transfer.bytes";
  /** KV pulls and the time they took, first layer to last byte (function timer). */
  public static final String KV_TRANSFER = "tandem.worker.kv.transfer";
}
