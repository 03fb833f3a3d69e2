package dev.tandem.router;

import dev.tandem.common.WorkerId;
import dev.tandem.router.index.Overlap;

/**
 * The chosen worker, how much of the request's prefix the router expects it to hold, and the cost
 * the choice minimised ({@code costName} {@code seconds}: the predicted time to first token;
 * {@code blocks}: Dynamo's block cost; NaN and empty for load-only selectors).
 */
public record Selection(WorkerId worker, Overlap predictedOverlap, double cost, String costName) {
  public Selection(WorkerId worker, Overlap predictedOverlap) {
    this(worker, predictedOverlap, Double.NaN, "");
  }

  public static Selection of(WorkerId worker) {
    return new Selection(worker, Overlap.NONE);
  }
}
