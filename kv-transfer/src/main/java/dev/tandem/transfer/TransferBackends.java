package dev.tandem.transfer;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Chooses a transfer backend: the named one, or the available one with the highest priority. */
public final class TransferBackends {
  private static final Logger log = LoggerFactory.getLogger(TransferBackends.class);

  private TransferBackends() {}

  /** Every backend on the class path, highest priority first. */
  public static List<TransferBackendProvider> all() {
    List<TransferBackendProvider> out = new ArrayList<>();
    ServiceLoader.load(TransferBackendProvider.class, TransferBackends.class.getClassLoader()).forEach(out::add);
    out.sort(Comparator.comparingInt(TransferBackendProvider::priority).reversed());
    return out;
  }

  /**
   * @param name a backend name, or null/"auto" for the best available one
   * @throws IllegalArgumentException naming the known backends, or why the named one is unavailable
   */
  public static TransferBackendProvider select(String name) {
    List<TransferBackendProvider> all = all();
    List<String> names = all.stream().map(TransferBackendProvider::name).toList();
    if (name == null || name.isEmpty() || name.equals("auto")) {
      for (TransferBackendProvider p : all) {
        if (p.isAvailable()) {
          log.info("KV transfer backend: {} (priority {}; available: {})", p.name(), p.priority(), names);
          return p;
        }
      }
      throw new IllegalArgumentException("no KV transfer backend is available; on the class path: " + names);
    }
    for (TransferBackendProvider p : all) {
      if (p.name().equals(name)) {
        if (!p.isAvailable()) {
          throw new IllegalArgumentException("KV transfer backend '" + name + "' is not available: " + p.unavailableReason());
        }
        log.info("KV transfer backend: {} (chosen explicitly)", name);
        return p;
      }
    }
    throw new IllegalArgumentException("unknown KV transfer backend '" + name + "'; known: " + names);
  }

  /**
   * With {@code auto}, the available backends other than {@code primary} that cross processes (not
   * {@code local}), highest priority first: a worker runs them beside its primary so that each peer
   * pair can pull over whichever its link probe measures faster. Empty for a named backend.
   */
  public static List<TransferBackendProvider> alongside(String name, TransferBackendProvider primary) {
    if (name != null && !name.isEmpty() && !name.equals("auto")) {
      return List.of();
    }
    List<TransferBackendProvider> out = new ArrayList<>();
    for (TransferBackendProvider p : all()) {
      if (p != primary && !p.name().equals(primary.name()) && p.priority() > 0 && p.isAvailable()) {
        out.add(p);
      }
    }
    return out;
  }
}
