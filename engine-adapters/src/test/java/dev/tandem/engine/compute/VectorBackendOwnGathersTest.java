package dev.tandem.engine.compute;

/**
 * The {@code cpu} backend with no room for shared KV gathers: every run of prefill rows gathers
 * its own copy of the KV it reads (the path a batch of long contexts takes), checked like the default.
 */
class VectorBackendOwnGathersTest extends ComputeBackendConformanceTest {
  @Override
  protected ComputeBackend create() {
    return new VectorBackend(2, 0);
  }

  @Override
  protected boolean roundsLongRowActivations() {
    return true;
  }
}
