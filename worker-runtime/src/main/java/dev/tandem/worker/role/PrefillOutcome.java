package dev.tandem.worker.role;

/**
 * What a decode worker tells its client about a remote prefill, on the first chunk: who prefilled
 * (empty when this worker prefilled itself), why it fell back (empty when it did not), and what
 * the KV transfer cost.
 */
public record PrefillOutcome(
    String prefillWorkerId, String fallbackReason, long transferMicros, long transferBytes, long exposedMicros) {

  /** The request asked for a remote prefill that this worker cannot do: it prefills locally. */
  public static PrefillOutcome fallback(String reason) {
    return new PrefillOutcome("", reason, 0, 0, 0);
  }
}
