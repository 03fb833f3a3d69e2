package dev.tandem.discovery;

/**
 * Told of every change to the set of registered workers. A record whose content changes under the
 * same id comes as {@link #removed} of the old one, then {@link #added} of the new one. Calls for
 * one watch come from one thread, in order; they should return quickly.
 */
public interface WorkerSetListener {
  void added(WorkerRecord worker);

  void removed(WorkerRecord worker);
}
