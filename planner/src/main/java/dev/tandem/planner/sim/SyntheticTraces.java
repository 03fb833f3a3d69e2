package dev.tandem.planner.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.DoubleUnaryOperator;

/**
 * Built-in traces, Poisson arrivals (thinned from the peak rate) whose rate follows a shape over
 * time, prompt and output lengths log-normal around their means, and prompts that share prefixes:
 * a fraction continue an earlier conversation (its blocks, then new ones), so that prefix caching
 * and KV-aware routing have something to win. Deterministic for a seed.
 *
 * <ul>
 *   <li>{@code steady}: the base rate throughout.
 *   <li>{@code diurnal}: one compressed day over the duration, from 10% of the base rate at night
 *       to 190% at noon.
 *   <li>{@code bursty}: the base rate with three spikes to 5× (30 s up, 2 minutes at 5×, 30 s
 *       down) at 15%, 40% and 65% of the duration, and no traffic at all from 78% to 92%.
 *   <li>{@code zero}: the base rate, nothing for the middle third, the base rate again.
 *   <li>{@code mooncake}: Mooncake's published statistics — about 23,600 requests an hour (6.56/s),
 *       mean prompt 7,590 tokens, mean output 182 (the Mooncake technical report, arXiv
 *       2407.00079, on its released trace) — in its own format; the released file cannot be fetched
 *       here, and its prefix structure is our assumption (60% of requests continue an earlier
 *       conversation).
 * </ul>
 */
public final class SyntheticTraces {
  public static final List<String> NAMES = List.of("steady", "diurnal", "bursty", "zero", "mooncake");

  private SyntheticTraces() {}

  /** What to generate: the shape, how long, the base rate, mean lengths and the seed. */
  public record Spec(String shape, double durationSeconds, double baseRate, double meanIsl, double meanOsl, long seed) {
    /** The anchor's lengths (ISL 3,000, OSL 150) at {@code baseRate} for an hour. */
    public static Spec of(String shape, double baseRate) {
      if (shape.equals("mooncake")) {
        return new Spec(shape, 3600, 23_608 / 3600.0, 7590, 182, 1);
      }
      return new Spec(shape, 3600, baseRate, 3000, 150, 1);
    }

    public Spec withDuration(double seconds) {
      return new Spec(shape, seconds, baseRate, meanIsl, meanOsl, seed);
    }

    public Spec withRate(double rate) {
      return new Spec(shape, durationSeconds, rate, meanIsl, meanOsl, seed);
    }
  }

  public static Trace generate(Spec spec) {
    double d = spec.durationSeconds();
    DoubleUnaryOperator shape = switch (spec.shape()) {
      case "steady", "mooncake" -> t -> 1;
      case "diurnal" -> t -> 1 - 0.9 * Math.cos(2 * Math.PI * t / d);
      case "bursty" -> t -> bursty(t / d, d);
      case "zero" -> t -> t > d / 3 && t < 2 * d / 3 ? 0 : 1;
      default -> throw new IllegalArgumentException("unknown trace '" + spec.shape() + "'; choose one of " + NAMES + " or a file");
    };
    double peak = spec.shape().equals("bursty") ? 5 : spec.shape().equals("diurnal") ? 1.9 : 1;
    Random random = new Random(spec.seed());
    List<TraceRequest> requests = new ArrayList<>();
    List<long[]> conversations = new ArrayList<>();
    long nextBlock = 1;
    int blockTokens = MooncakeTraces.BLOCK_TOKENS;
    double t = 0;
    double maxRate = spec.baseRate() * peak;
    while (maxRate > 0) {
      t += -Math.log(1 - random.nextDouble()) / maxRate;
      if (t >= d) {
        break;
      }
      if (random.nextDouble() * peak > shape.applyAsDouble(t)) {
        continue; // thinned
      }
      int isl = (int) Math.max(16, Math.min(131_072, logNormal(random, spec.meanIsl(), 0.6)));
      int osl = (int) Math.max(1, Math.min(8192, logNormal(random, spec.meanOsl(), 0.6)));
      int blocks = (isl + blockTokens - 1) / blockTokens;
      long[] ids = new long[blocks];
      int reused = 0;
      if (!conversations.isEmpty() && random.nextDouble() < 0.6) {
        // continue a recent conversation: the newer, the likelier
        int k = conversations.size() - 1 - Math.min(conversations.size() - 1, (int) Math.floor(-Math.log(1 - random.nextDouble()) * 40));
        long[] prior = conversations.get(k);
        reused = Math.min(prior.length, Math.max(0, blocks - 1));
        System.arraycopy(prior, 0, ids, 0, reused);
      }
      for (int i = reused; i < blocks; i++) {
        ids[i] = nextBlock++;
      }
      conversations.add(ids);
      if (conversations.size() > 4096) {
        conversations.subList(0, 1024).clear();
      }
      requests.add(new TraceRequest(t, isl, osl, ids));
    }
    return new Trace(spec.shape(), requests, blockTokens);
  }

  /** The bursty shape at fraction {@code f} of the duration {@code d} seconds. */
  private static double bursty(double f, double d) {
    if (f >= 0.78 && f < 0.92) {
      return 0;
    }
    double t = f * d;
    for (double at : new double[] {0.15, 0.40, 0.65}) {
      double start = at * d;
      double x = t - start;
      if (x >= 0 && x < 30) {
        return 1 + 4 * x / 30;
      }
      if (x >= 30 && x < 150) {
        return 5;
      }
      if (x >= 150 && x < 180) {
        return 5 - 4 * (x - 150) / 30;
      }
    }
    return 1;
  }

  /** A log-normal draw with the given mean and log-space standard deviation. */
  private static double logNormal(Random random, double mean, double sigma) {
    double mu = Math.log(mean) - sigma * sigma / 2;
    return Math.exp(mu + sigma * random.nextGaussian());
  }
}
