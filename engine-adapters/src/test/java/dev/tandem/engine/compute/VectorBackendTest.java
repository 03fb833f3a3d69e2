package dev.tandem.engine.compute;

/** The {@code cpu} backend, on two threads so that ranges really split. */
class VectorBackendTest extends ComputeBackendConformanceTest {
  @Override
  protected ComputeBackend create() {
    return new VectorBackend(2);
  }

  @Override
  protected boolean roundsLongRowActivations() {
    return true;
  }
}
