package dev.tandem.frontend.http;

import java.time.Duration;

/**
 * Who may use the API and how much at once: API keys ({@code /live} and {@code /health} never need
 * one, {@code /metrics} only with {@code keysOnMetrics}); the most generation requests in flight
 * before a 429 with {@code Retry-After} (0: no limit); the most open connections (0: no limit);
 * how long a request may take to arrive whole before a 408 and close; how long a connection may sit
 * idle between requests before it is closed; whether callers may load and unload LoRA adapters
 * ({@code /v1/load_lora_adapter}, {@code /v1/unload_lora_adapter}; off: 404 naming the flag).
 */
public record Admission(
    ApiKeys keys, boolean keysOnMetrics, int maxInflightRequests, int maxConnections, Duration requestReadTimeout,
    Duration idleTimeout, boolean loraUpdates) {

  /** No keys, no limits but the timeouts: 60 s to send a request, 300 s idle; no LoRA updates. */
  public static Admission open() {
    return new Admission(ApiKeys.none(), false, 0, 0, Duration.ofSeconds(60), Duration.ofSeconds(300), false);
  }

  /** This admission with LoRA adapter loads and unloads allowed or not ({@code --allow-runtime-lora-updating}). */
  public Admission withLoraUpdates(boolean allowed) {
    return new Admission(keys, keysOnMetrics, maxInflightRequests, maxConnections, requestReadTimeout, idleTimeout, allowed);
  }
}
