package dev.tandem.discovery;

/**
 * A registration that lives in this process only: open until closed, then {@code onClose} runs
 * once. Static discovery's (the set is in memory) and Kubernetes' (readiness publishes the pod).
 *
 * <p>Thread-safe.
 */
final class HeldRegistration implements Registration {
  private final WorkerRecord record;
  private final Runnable onClose;
  private boolean open = true;

  HeldRegistration(WorkerRecord record, Runnable onClose) {
    this.record = record;
    this.onClose = onClose;
  }

  @Override
  public WorkerRecord record() {
    return record;
  }

  @Override
  public synchronized boolean registered() {
    return open;
  }

  @Override
  public void close() {
    synchronized (this) {
      if (!open) {
        return;
      }
      open = false;
    }
    onClose.run();
  }
}
