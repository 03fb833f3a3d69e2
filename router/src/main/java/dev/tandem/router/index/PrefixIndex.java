package dev.tandem.router.index;

import dev.tandem.common.WorkerId;
import java.util.Map;

/** Answers which workers hold how much of a request's prefix. */
public interface PrefixIndex {
  /**
   * Per worker, the leading blocks of {@code sequenceHashes} it holds; workers holding none are
   * absent.
   */
  Map<WorkerId, Overlap> overlaps(long[] sequenceHashes);
}
