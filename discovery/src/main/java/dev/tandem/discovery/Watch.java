package dev.tandem.discovery;

import java.util.Map;

/** A running watch of the worker set; closing it stops the listener's calls. */
public interface Watch extends AutoCloseable {
  /** The set as this watch last saw it, by worker id. */
  Map<String, WorkerRecord> current();

  /** True while the watch is connected to its backend (false while it retries). */
  boolean connected();

  @Override
  void close();
}
