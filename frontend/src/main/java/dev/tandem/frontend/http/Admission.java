package dev.tandem.frontend.http;

import java.time.Duration;

/**
 * Who may use the API and how much at once: API keys ({@code /live} and {@code /health} never need
 * one, {@code /metrics} only with {@code keysOnMetrics}); the most generation requests in flight
 * before a 429 with {@code Retry-After} (0: no limit); the most open connections (0: no limit);
 * how long a request may take to arrive whole before a 408 and close; how long a connection may sit
 * idle between requests before it is closed.
 */
public record Admission(
    ApiKeys keys, boolean keysOnMetrics, int maxInflightRequests, int maxConnections, Duration requestReadTimeout,
    Duration idleTimeout) {

  /** No keys, no limits but the timeouts: 60 s to send a request, 300 s idle. */
  public static Admission open() {
    return new Admission(ApiKeys.none(), false, 0, 0, Duration.ofSeconds(60), Duration.ofSeconds(300));
  }
}
