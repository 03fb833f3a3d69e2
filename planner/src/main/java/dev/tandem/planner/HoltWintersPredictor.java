package dev.tandem.planner;

/**
 * Additive Holt-Winters: level, trend and one seasonal offset per position in a season of {@code
 * period} intervals (a day at the planner's interval, for diurnal traffic). Until one whole season
 * has been seen it forecasts as {@link HoltPredictor} does; then the first season's deviations from
 * its mean start the seasonal offsets.
 */
public final class HoltWintersPredictor implements Predictor {
  private final double alpha;
  private final double beta;
  private final double gamma;
  private final double[] season;
  private final double[] firstSeason;
  private final HoltPredictor warmup;
  private double level;
  private double trend;
  private long count;

  public HoltWintersPredictor(double alpha, double beta, double gamma, int period) {
    if (period < 2) {
      throw new IllegalArgumentException("holt-winters season must be >= 2 intervals, was " + period);
    }
    if (!(gamma >= 0 && gamma <= 1)) {
      throw new IllegalArgumentException("holt-winters needs 0 <= gamma <= 1, was " + gamma);
    }
    this.alpha = alpha;
    this.beta = beta;
    this.gamma = gamma;
    this.season = new double[period];
    this.firstSeason = new double[period];
    this.warmup = new HoltPredictor(alpha, beta);
  }

  @Override
  public String name() {
    return "holt-winters";
  }

  @Override
  public void observe(double value) {
    if (!Predictor.usable(value)) {
      return;
    }
    int period = season.length;
    int position = (int) (count % period);
    if (count < period) {
      warmup.observe(value);
      firstSeason[position] = value;
      if (count == period - 1) {
        double mean = 0;
        for (double v : firstSeason) {
          mean += v;
        }
        mean /= period;
        for (int i = 0; i < period; i++) {
          season[i] = firstSeason[i] - mean;
        }
        level = mean;
        trend = 0;
      }
    } else {
      double previous = level;
      level = Math.max(0, alpha * (value - season[position]) + (1 - alpha) * (level + trend));
      trend = beta * (level - previous) + (1 - beta) * trend;
      season[position] = gamma * (value - level) + (1 - gamma) * season[position];
    }
    count++;
  }

  @Override
  public double predict(int steps) {
    int h = Math.max(1, steps);
    if (count < season.length) {
      return warmup.predict(h);
    }
    int position = (int) ((count + h - 1) % season.length);
    return Predictor.clamp(level + h * trend + season[position]);
  }
}
