package dev.tandem.planner.sim;

import java.util.List;

/**
 * What one simulated run measured. {@code slaAttainment} is the fraction of requests whose TTFT
 * and mean ITL both met the targets; goodput counts those per second of the trace; goodput per
 * worker divides it by the mean number of workers held (worker-seconds ÷ duration).
 */
public record SimReport(
    String name,
    String trace,
    int requests,
    int completed,
    double slaAttainment,
    double ttftP50,
    double ttftP90,
    double ttftP99,
    double itlP90,
    double durationSeconds,
    double goodput,
    double workerSeconds,
    double meanWorkers,
    double goodputPerWorker,
    int scaleEvents,
    int peakWorkers,
    double wallSeconds,
    long routingDecisions,
    List<Sample> timeline) {

  /** One point of the timeline: arrivals per second, workers per pool (serving, held), p90 latencies, finished and good requests of the window. */
  public record Sample(double time, double arrivalRate, int prefillReady, int decodeReady, int prefillHeld, int decodeHeld,
      double ttftP90, double itlP90, int finished, int met) {}

  /** Simulated seconds per wall-clock second. */
  public double speedup() {
    return wallSeconds > 0 ? durationSeconds / wallSeconds : Double.POSITIVE_INFINITY;
  }
}
