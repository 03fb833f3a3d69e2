package dev.tandem.planner;

/**
 * Time to first token of a prefill pool as a queue: {@code n} workers, Poisson arrivals, each
 * request's service time its prompt's prefill time in the {@link Profile} (the {@link LengthMix} of
 * uncached lengths), the router sending each request to the worker that frees first (one queue
 * for the pool). Waiting follows M/M/n (Erlang C) with its mean scaled by {@code (1 + c²)/2} for the
 * service times' squared coefficient of variation {@code c²} (Allen–Cunneen), its tail taken as
 * exponential; TTFT is that wait plus the request's own prefill. A long-prompt tail thus costs
 * workers twice: its own prefill, and everyone queued behind it. Pure.
 */
public final class PrefillQueue {
  /** The most a worker is loaded, whatever the model allows: queues this close to 1 are all noise. */
  static final double MAX_UTILISATION = 0.95;
  private static final int MAX_WORKERS = 1 << 20;

  private final double[] seconds; // service time per length of the mix
  private final double[] shares;
  private final double meanSeconds;
  private final double scv; // squared coefficient of variation of the service time

  public PrefillQueue(Profile profile, LengthMix mix) {
    if (mix.isEmpty()) {
      throw new IllegalArgumentException("a prefill queue needs at least one prompt length");
    }
    int k = mix.size();
    seconds = new double[k];
    shares = new double[k];
    double m1 = 0, m2 = 0;
    for (int i = 0; i < k; i++) {
      seconds[i] = profile.prefillSeconds(Math.max(1, mix.tokens(i)));
      shares[i] = mix.share(i);
      m1 += shares[i] * seconds[i];
      m2 += shares[i] * seconds[i] * seconds[i];
    }
    meanSeconds = m1;
    scv = Math.max(0, m2 / (m1 * m1) - 1);
  }

  /** Mean prefill seconds per request. */
  public double meanSeconds() {
    return meanSeconds;
  }

  /** The {@code q}-quantile of TTFT with {@code rate} requests per second on {@code workers} workers (∞ if they cannot keep up). */
  public double ttftQuantile(double rate, int workers, double q) {
    return ttftQuantile(rate, workers, q, 1);
  }

  /** The same with every prefill taking {@code slowdown} times as long (workers that share their time with decoding). */
  private double ttftQuantile(double rate, int workers, double q, double slowdown) {
    if (workers <= 0) {
      return Double.POSITIVE_INFINITY;
    }
    double mean = meanSeconds * slowdown;
    double a = Math.max(0, rate) * mean; // offered load in workers
    if (a >= workers) {
      return Double.POSITIVE_INFINITY;
    }
    double waitProbability = erlangC(workers, a);
    double decay = (workers - a) / mean * 2 / (1 + scv); // 1 / mean wait of those who wait
    double tail = 1 - q;
    double lo = 0, hi = seconds[seconds.length - 1] * slowdown;
    while (exceeds(hi, waitProbability, decay, slowdown) > tail) {
      hi *= 2;
    }
    for (int i = 0; i < 60; i++) {
      double mid = (lo + hi) / 2;
      if (exceeds(mid, waitProbability, decay, slowdown) > tail) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return hi;
  }

  /** P(TTFT > x): over the mix, the chance that the wait exceeds what is left of x after the prefill. */
  private double exceeds(double x, double waitProbability, double decay, double slowdown) {
    double p = 0;
    for (int i = 0; i < seconds.length; i++) {
      double left = x - seconds[i] * slowdown;
      p += shares[i] * (left < 0 ? 1 : waitProbability * Math.exp(-decay * left));
    }
    return p;
  }

  /**
   * The workers' worth of time the prefill load needs, as a fraction: of the {@link #workersFor}
   * workers, the least share {@code c / n} of their time that still keeps the quantile within the
   * target when each prefill takes {@code n / c} as long for it. What a pool that also decodes must
   * set aside for prefill: a trickle of requests needs a sliver of one worker, not all of it.
   */
  public double capacityFor(double rate, double target, double q) {
    return capacityOf(workersFor(rate, target, q), MAX_WORKERS, rate, target, q);
  }

  /**
   * {@link #capacityFor(double, double, double)} for the {@code n} workers {@link #workersFor} found
   * with at most {@code cap}: all {@code n} when the cap held the search back.
   */
  public double capacityOf(int n, int cap, double rate, double target, double q) {
    if (n == 0 || n >= cap) {
      return n;
    }
    double goal = goal(target, q);
    double lo = Math.max(0, rate) * meanSeconds, hi = n;
    for (int i = 0; i < 50; i++) {
      double mid = (lo + hi) / 2;
      if (ttftQuantile(rate, n, q, n / mid) <= goal) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi;
  }

  /** The target, or 1.25× what an idle pool reaches where that is more (see {@link #workersFor}). */
  private double goal(double target, double q) {
    return Math.max(target, 1.25 * alone(q));
  }

  /**
   * The fewest workers that keep the {@code q}-quantile of TTFT within {@code target} at {@code
   * rate} (and none above {@link #MAX_UTILISATION}). Where even an idle pool cannot (more than
   * {@code 1 − q} of the prompts take longer than the target alone), the target is taken as 1.25×
   * what an idle pool reaches, so that the pool is sized for what is attainable rather than without
   * bound.
   */
  public int workersFor(double rate, double target, double q) {
    return workersFor(rate, target, q, MAX_WORKERS);
  }

  /**
   * {@link #workersFor(double, double, double)}, searching no further than {@code cap} (the pool's
   * maximum): {@code cap} when even that many would not do. Each try costs O(workers).
   */
  public int workersFor(double rate, double target, double q, int cap) {
    if (!(rate > 0)) {
      return 0;
    }
    int most = Math.max(1, Math.min(cap, MAX_WORKERS));
    double least = Math.ceil(rate * meanSeconds / MAX_UTILISATION - 1e-9);
    if (!(least < most)) {
      return most; // more than the pool may have (an infinite rate too)
    }
    double goal = goal(target, q);
    int n = Math.max(1, (int) least);
    if (ttftQuantile(rate, n, q) <= goal) {
      return n;
    }
    int lo = n, hi = n;
    while (ttftQuantile(rate, hi, q) > goal) {
      lo = hi;
      if (hi >= most) {
        return most;
      }
      hi = Math.min(most, hi * 2);
    }
    while (hi - lo > 1) {
      int mid = (lo + hi) >>> 1;
      if (ttftQuantile(rate, mid, q) <= goal) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi;
  }

  /** The {@code q}-quantile of the prefill time alone (no waiting). */
  double alone(double q) {
    double cumulative = 0;
    for (int i = 0; i < seconds.length; i++) {
      cumulative += shares[i];
      if (cumulative >= q - 1e-12) {
        return seconds[i];
      }
    }
    return seconds[seconds.length - 1];
  }

  /** Erlang C: the chance that an arrival waits, {@code n} servers at offered load {@code a < n}. */
  static double erlangC(int n, double a) {
    double b = 1; // Erlang B by its recursion, stable for large n
    for (int k = 1; k <= n; k++) {
      b = a * b / (k + a * b);
    }
    double rho = a / n;
    return b / (1 - rho * (1 - b));
  }
}
