package dev.tandem.router;

import dev.tandem.common.WorkerId;
import dev.tandem.router.index.Overlap;

/**
 * The chosen worker, how much of the request's prefix the router expects it to hold, and the cost
 * the choice minimised ({@code costName} {@code seconds}: the predicted time to first token;
 * {@code blocks}: Dynamo's block cost; NaN and empty for load-only selectors). {@code othersCost}
 * is the part of {@code cost} that is not this request's own wait but what it does to the streams
 * already decoding there (the seconds cost's stall term; 0 otherwise), so that {@code cost −
 * othersCost} is the request's predicted time to first token there.
 */
public record Selection(WorkerId worker, Overlap predictedOverlap, double cost, String costName, double othersCost) {
  public Selection(WorkerId worker, Overlap predictedOverlap) {
    this(worker, predictedOverlap, Double.NaN, "", 0);
  }

  public static Selection of(WorkerId worker) {
    return new Selection(worker, Overlap.NONE);
  }

  /** The predicted seconds to the first token on the chosen worker; NaN unless the cost is in seconds. */
  public double predictedTtftSeconds() {
    return "seconds".equals(costName) ? cost - othersCost : Double.NaN;
  }
}
