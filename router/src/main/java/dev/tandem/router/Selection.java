package dev.tandem.router;

import dev.tandem.common.WorkerId;
import dev.tandem.router.index.Overlap;

/** The chosen worker and how much of the request's prefix the router expects it to hold. */
public record Selection(WorkerId worker, Overlap predictedOverlap) {
  public static Selection of(WorkerId worker) {
    return new Selection(worker, Overlap.NONE);
  }
}
