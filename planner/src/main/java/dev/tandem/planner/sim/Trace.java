package dev.tandem.planner.sim;

import java.util.List;

/** Requests in arrival order, their blocks {@code blockTokens} tokens long, and the trace's name. */
public record Trace(String name, List<TraceRequest> requests, int blockTokens) {
  public Trace {
    requests = List.copyOf(requests);
    for (int i = 1; i < requests.size(); i++) {
      if (requests.get(i).arrivalSeconds() < requests.get(i - 1).arrivalSeconds()) {
        throw new IllegalArgumentException("trace " + name + ": request " + i + " arrives before request " + (i - 1));
      }
    }
  }

  /** Seconds from the first arrival to the last. */
  public double durationSeconds() {
    return requests.isEmpty() ? 0 : requests.getLast().arrivalSeconds();
  }

  /** Arrivals in each window of {@code seconds}, from 0 to the last arrival. */
  public int[] arrivalsPer(double seconds) {
    int[] counts = new int[(int) Math.floor(durationSeconds() / seconds) + 1];
    for (TraceRequest r : requests) {
      counts[(int) Math.floor(r.arrivalSeconds() / seconds)]++;
    }
    return counts;
  }
}
