package dev.tandem.planner.sim;

import dev.tandem.planner.Planner;
import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.Predictor;
import dev.tandem.planner.Predictors;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Every predictor on the same trace: its error forecasting the next interval's arrivals (mean
 * absolute error ÷ mean arrivals, over the trace's intervals) and the planner run it gives; last,
 * {@code foresight}, the same planner told the trace's true rates ({@link ForesightPredictor}): what
 * no predictor can beat, so the gap between it and the best predictor is prediction's, and what
 * it still misses is not.
 */
public final class PredictorComparison {
  private PredictorComparison() {}

  public record Row(String predictor, double rateMape, SimReport report) {}

  public static List<Row> run(Trace trace, SimConfig plannerRun, PlannerConfig planner, Consumer<String> progress) {
    List<Row> rows = new ArrayList<>();
    int[] arrivals = trace.arrivalsPer(planner.intervalSeconds());
    for (String name : Predictors.NAMES) {
      progress.accept("predictor " + name);
      PlannerConfig c = PlannerConfig.builder().mode(planner.mode()).profile(planner.profile())
          .intervalSeconds(planner.intervalSeconds()).targets(planner.targets()).prefillLimits(planner.prefillLimits())
          .decodeLimits(planner.decodeLimits()).workerBudget(planner.workerBudget()).thresholds(planner.thresholds())
          .predictor(name).seasonIntervals(planner.seasonIntervals()).lookaheadIntervals(planner.lookaheadIntervals())
          .graceIntervals(planner.graceIntervals()).idleIntervalsToZero(planner.idleIntervalsToZero())
          .headroom(planner.headroom()).build();
      SimReport report = new ClusterSimulator(plannerRun.planned(name, c, plannerRun.startupSeconds()), trace).run(null);
      rows.add(new Row(name, error(Predictors.create(name, planner.seasonIntervals()), arrivals), report));
    }
    progress.accept("predictor " + ForesightPredictor.NAME + " (the trace's true rates)");
    SimConfig run = plannerRun.planned(ForesightPredictor.NAME, planner, plannerRun.startupSeconds());
    Planner told = new Planner(planner, new ForesightPredictor(arrivals, planner.intervalSeconds()));
    rows.add(new Row(ForesightPredictor.NAME, 0, new ClusterSimulator(run, trace, told).run(null)));
    return rows;
  }

  /** One-step-ahead mean absolute error over the series, relative to its mean. */
  static double error(Predictor p, int[] series) {
    double abs = 0, sum = 0;
    int n = 0;
    for (int i = 0; i < series.length; i++) {
      if (i > 0) {
        abs += Math.abs(p.predict(1) - series[i]);
        sum += series[i];
        n++;
      }
      p.observe(series[i]);
    }
    return n == 0 || sum == 0 ? 0 : abs / sum;
  }
}
