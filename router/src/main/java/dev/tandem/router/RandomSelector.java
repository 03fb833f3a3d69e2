package dev.tandem.router;

import java.util.List;
import java.util.random.RandomGenerator;

/** Each request to a uniformly random candidate. Thread-safe if the generator is. */
public final class RandomSelector implements WorkerSelector {
  private final RandomGenerator random;

  public RandomSelector() {
    this(java.util.concurrent.ThreadLocalRandom.current());
  }

  /** With a given generator, for reproducible tests (then used from one thread). */
  public RandomSelector(RandomGenerator random) {
    this.random = random;
  }

  @Override
  public Selection select(RoutingRequest request, List<WorkerLoad> candidates) {
    RandomGenerator r =
        random instanceof java.util.concurrent.ThreadLocalRandom
            ? java.util.concurrent.ThreadLocalRandom.current()
            : random;
    return Selection.of(candidates.get(r.nextInt(candidates.size())).workerId());
  }

  @Override
  public String name() {
    return "random";
  }
}
