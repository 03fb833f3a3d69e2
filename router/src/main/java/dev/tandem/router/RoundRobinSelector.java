package dev.tandem.router;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** Each request to the next candidate in turn. Thread-safe. */
public final class RoundRobinSelector implements WorkerSelector {
  private final AtomicLong next = new AtomicLong();

  @Override
  public Selection select(RoutingRequest request, List<WorkerLoad> candidates) {
    int i = (int) Math.floorMod(next.getAndIncrement(), (long) candidates.size());
    return Selection.of(candidates.get(i).workerId());
  }

  @Override
  public String name() {
    return "round-robin";
  }
}
