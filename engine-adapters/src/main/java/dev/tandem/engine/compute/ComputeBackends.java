package dev.tandem.engine.compute;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Picks a compute backend: the one named, else the available one with the highest priority. */
public final class ComputeBackends {
  private static final Logger LOG = LoggerFactory.getLogger(ComputeBackends.class);

  private ComputeBackends() {}

  /** Every registered provider, highest priority first. */
  public static List<ComputeBackendProvider> providers() {
    List<ComputeBackendProvider> all = new ArrayList<>();
    ServiceLoader.load(ComputeBackendProvider.class, ComputeBackends.class.getClassLoader())
        .forEach(all::add);
    all.sort(Comparator.comparingInt(ComputeBackendProvider::priority).reversed());
    return all;
  }

  /**
   * Creates the backend called {@code name}, or the best available one when {@code name} is null
   * or "auto".
   *
   * @throws IllegalArgumentException if the named backend is unknown or cannot run here
   */
  public static ComputeBackend create(String name, int threads) {
    List<ComputeBackendProvider> all = providers();
    boolean auto = name == null || name.isEmpty() || name.equals("auto");
    for (ComputeBackendProvider p : all) {
      if (auto ? p.isAvailable() : p.name().equals(name)) {
        if (!p.isAvailable()) {
          throw new IllegalArgumentException("compute backend '" + name + "' cannot run here: " + p.unavailableReason());
        }
        ComputeBackend backend = p.create(threads);
        LOG.info("compute backend: {} (of {})", p.name(), all.stream().map(ComputeBackendProvider::name).toList());
        return backend;
      }
    }
    throw new IllegalArgumentException(
        "unknown compute backend '" + name + "'; known: "
            + all.stream().map(ComputeBackendProvider::name).toList());
  }
}
