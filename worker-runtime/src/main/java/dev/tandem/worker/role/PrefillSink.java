package dev.tandem.worker.role;

import dev.tandem.worker.EngineLoop;

/** Where a remotely prefilled request's outputs go. */
public interface PrefillSink extends EngineLoop.Listener {
  /** Called once, before the first output. */
  void outcome(PrefillOutcome outcome);
}
