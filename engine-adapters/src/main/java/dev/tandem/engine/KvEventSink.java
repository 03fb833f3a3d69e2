package dev.tandem.engine;

import dev.tandem.common.KvEvent;

/** Receives an engine's KV events, on the engine's thread, in event-id order. */
@FunctionalInterface
public interface KvEventSink {
  KvEventSink NONE = event -> {};

  void accept(KvEvent event);
}
