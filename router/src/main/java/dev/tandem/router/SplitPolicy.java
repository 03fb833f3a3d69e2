package dev.tandem.router;

import dev.tandem.common.PrefillCost;

/**
 * Decides, per request, whether its prompt is prefilled on a prefill worker and pulled by the
 * decode worker, or prefilled by the decode worker itself (DESIGN.md, "When to split").
 *
 * <p>Remote: {@code wait_P + prefill_P + non-overlapped transfer}, prefill times from each side's
 * measured {@link PrefillCost} (per token plus per attended token), where the transfer moves the
 * blocks the decode worker lacks ({@code kv_bytes_per_token × uncached_D / link bytes/s + latency})
 * and overlaps the prefill's last pass layer by layer, so at least one layer's share and at most
 * all of it shows. Local: {@code wait_D + prefill_D}, plus the stall a local prefill causes: each
 * of the decode worker's running streams waits {@code prefill_D} for its next token; weighted by
 * {@code stallWeight} per stream. A prefill worker on the same CPUs as the decode worker stalls
 * those streams just the same and computes no faster, so then the stall does not count for
 * splitting and both prefills are timed at the decode worker's speed.
 *
 * <p>When the router chose both workers by predicted seconds ({@link PredictedTtftCost}), {@code
 * wait + prefill} on each side is that prediction ({@link Predicted}: queue, prefill, the decode
 * steps it shares, eviction), so the split weighs the very figures the worker choice minimised;
 * on shared CPUs the speeds rule as above.
 *
 * <p>Plain values in and out; no I/O. Thread-safe (immutable).
 */
public final class SplitPolicy {
  /** always: split whenever a prefill worker is reachable; never; auto: by the cost model. */
  public enum Mode {
    AUTO,
    ALWAYS,
    NEVER;

    public static Mode parse(String s) {
      try {
        return valueOf(s.toUpperCase(java.util.Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("unknown disaggregation mode '" + s + "'; known: auto, always, never");
      }
    }
  }

  /** The measured link between one decode worker and one prefill worker. */
  public record Link(double bytesPerSecond, double latencySeconds) {}

  /**
   * The router's own predictions of the time to first token (seconds; {@link Selection#predictedTtftSeconds}):
   * on the decode worker prefilling itself, and on the chosen prefill worker before any transfer.
   * When present, the decision weighs these — the same seconds the worker choice minimised — instead
   * of recomputing queue and prefill from the measured speeds.
   */
  public record Predicted(double localSeconds, double remotePrefillSeconds) {
    /** Both figures, or null when either is missing (a cost not in seconds). */
    public static Predicted of(double localSeconds, double remotePrefillSeconds) {
      return Double.isFinite(localSeconds) && Double.isFinite(remotePrefillSeconds) && localSeconds >= 0 && remotePrefillSeconds >= 0
          ? new Predicted(localSeconds, remotePrefillSeconds)
          : null;
    }
  }

  /** What the router knows about one candidate split; {@code predicted} may be null. */
  public record Inputs(
      int promptTokens,
      int uncachedOnDecode,
      int uncachedOnPrefill,
      long kvBytesPerToken,
      int layers,
      Link link,
      PrefillCost decodePrefill,
      PrefillCost prefillPrefill,
      long decodeQueuedPrefillTokens,
      long prefillQueuedPrefillTokens,
      int decodeActiveRequests,
      boolean sharedCompute,
      Predicted predicted) {}

  /**
   * The decision with the estimates behind it (seconds; NaN where unknown), and the transfer
   * backend whose measured link they used (empty when none was).
   */
  public record Decision(
      boolean split, String reason, double localSeconds, double remoteSeconds, double transferSeconds, String kvTransferBackend) {
    public Decision(boolean split, String reason, double localSeconds, double remoteSeconds, double transferSeconds) {
      this(split, reason, localSeconds, remoteSeconds, transferSeconds, "");
    }

    /** This decision, made with the link measured over {@code backend}. */
    public Decision over(String backend) {
      return new Decision(split, reason, localSeconds, remoteSeconds, transferSeconds, backend);
    }
  }

  private final Mode mode;
  private final double stallWeight;

  public SplitPolicy(Mode mode, double stallWeight) {
    if (stallWeight < 0) {
      throw new IllegalArgumentException("stall weight must be >= 0: " + stallWeight);
    }
    this.mode = mode;
    this.stallWeight = stallWeight;
  }

  public static SplitPolicy defaults() {
    return new SplitPolicy(Mode.AUTO, 1.0);
  }

  public Mode mode() {
    return mode;
  }

  public Decision decide(Inputs in) {
    double nan = Double.NaN;
    if (mode == Mode.NEVER) {
      return new Decision(false, "disaggregation off", nan, nan, nan);
    }
    if (mode == Mode.ALWAYS) {
      return new Decision(true, "disaggregation always", nan, nan, nan);
    }
    if (in.link() == null || in.link().bytesPerSecond() <= 0) {
      return new Decision(false, "link to the prefill worker not measured yet", nan, nan, nan);
    }
    // Same model on both sides: one side's measured prefill cost stands in for the other's.
    PrefillCost costD = in.decodePrefill().known() ? in.decodePrefill() : in.prefillPrefill();
    if (!costD.known()) {
      return new Decision(false, "prefill speed not measured yet", nan, nan, nan);
    }
    // On shared CPUs the two prefills run on the same compute: the remote one cannot be faster.
    PrefillCost costP = in.sharedCompute() || !in.prefillPrefill().known() ? costD : in.prefillPrefill();
    int prompt = in.promptTokens();
    double prefillD = costD.seconds(in.uncachedOnDecode(), prompt - in.uncachedOnDecode());
    double prefillP = costP.seconds(in.uncachedOnPrefill(), prompt - in.uncachedOnPrefill());
    double transfer = in.link().latencySeconds() + (double) in.kvBytesPerToken() * in.uncachedOnDecode() / in.link().bytesPerSecond();
    int layers = Math.max(1, in.layers());
    double exposed = Math.max(transfer / layers, transfer - prefillP * (layers - 1) / layers);
    double remote;
    double local;
    if (in.predicted() != null && !in.sharedCompute()) {
      remote = in.predicted().remotePrefillSeconds() + exposed;
      local = in.predicted().localSeconds();
    } else {
      remote = in.prefillQueuedPrefillTokens() * costP.perToken() + prefillP + exposed;
      local = in.decodeQueuedPrefillTokens() * costD.perToken() + prefillD;
    }
    double stall = in.sharedCompute() ? 0 : stallWeight * in.decodeActiveRequests() * prefillD;
    boolean split = remote < local + stall;
    String reason;
    if (split) {
      reason = remote < local ? "remote prefill is faster" : "protects " + in.decodeActiveRequests() + " decoding streams";
    } else {
      reason = in.sharedCompute() ? "prefill worker shares the decode worker's CPUs; transfer only adds time" : "local prefill is cheaper";
    }
    return new Decision(split, reason, local + stall, remote, transfer);
  }
}
