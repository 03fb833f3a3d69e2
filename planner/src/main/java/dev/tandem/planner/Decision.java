package dev.tandem.planner;

/**
 * One interval's decision and what it rested on: the pools' replicas before and the ones wanted,
 * the mode that sized them ({@code sla}, or {@code load} also when SLA mode has no profile), the
 * forecast, the correction factors, and a one-line reason for the log.
 */
public record Decision(
    long interval,
    String mode,
    Forecast forecast,
    int prefillBefore,
    int decodeBefore,
    int prefill,
    int decode,
    double prefillCorrection,
    double decodeCorrection,
    String reason) {

  public int replicas(Pool pool) {
    return pool == Pool.PREFILL ? prefill : decode;
  }
}
