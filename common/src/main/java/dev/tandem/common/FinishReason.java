package dev.tandem.common;

/** Why a generation ended. */
public enum FinishReason {
  /** An end-of-sequence or stop token (or a stop string the frontend matched). */
  STOP,
  /** max_tokens or the context window. */
  LENGTH,
  /** Cancelled by the caller. */
  CANCELLED,
  /** The worker ended it after a failure. */
  ERROR
}
