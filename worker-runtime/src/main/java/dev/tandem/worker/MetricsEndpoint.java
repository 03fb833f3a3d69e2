package dev.tandem.worker;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * A worker's small HTTP port: {@code GET /metrics} (Prometheus text), {@code GET /health} (200 while
 * serving, 503 once draining or stopped: a readiness probe), {@code GET /live} (200 while the process
 * answers: a liveness probe) and {@code POST /drain} (202; starts a graceful drain; 403 when
 * {@code drain} is null, as under mutual TLS, where this unauthenticated port must not stop the
 * worker); 404 otherwise,
 * 405 for a wrong method. The JDK's HTTP server on one virtual thread per exchange.
 */
final class MetricsEndpoint implements AutoCloseable {
  private final HttpServer server;

  private MetricsEndpoint(HttpServer server) {
    this.server = server;
  }

  /**
   * Listens on {@code host:port} (0: any free port).
   *
   * @throws UncheckedIOException naming the address if it cannot listen
   */
  static MetricsEndpoint start(String host, int port, Supplier<String> metrics, Supplier<String> health, Runnable drain) {
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 16);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot listen for metrics on " + host + ":" + port + ": " + e.getMessage(), e);
    }
    server.createContext("/", exchange -> {
      try (exchange) {
        String path = exchange.getRequestURI().getPath();
        String method = exchange.getRequestMethod();
        String wanted = path.equals("/drain") ? "POST" : "GET";
        if (!method.equals(wanted) && (path.equals("/drain") || path.equals("/metrics") || path.equals("/health") || path.equals("/live"))) {
          exchange.getResponseHeaders().set("Allow", wanted);
          reply(exchange, 405, "use " + wanted + " for " + path + "\n", "text/plain");
          return;
        }
        switch (path) {
          case "/metrics" -> reply(exchange, 200, metrics.get(), "text/plain; version=0.0.4; charset=utf-8");
          case "/health" -> {
            String status = health.get();
            reply(exchange, status.equals("serving") ? 200 : 503, "{\"status\":\"" + status + "\"}\n", "application/json");
          }
          case "/live" -> reply(exchange, 200, "{\"status\":\"live\"}\n", "application/json");
          case "/drain" -> {
            if (drain == null) {
              reply(exchange, 403, "{\"error\":\"this worker runs with --tls-dir: POST /drain is off (the metrics port is not authenticated); drain it with SIGTERM\"}\n", "application/json");
              return;
            }
            reply(exchange, 202, "{\"status\":\"draining\"}\n", "application/json");
            Thread.ofPlatform().name("drain").start(drain);
          }
          default -> reply(exchange, 404, "not found; try /metrics, /health, /live or POST /drain\n", "text/plain");
        }
      }
    });
    server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
    server.start();
    return new MetricsEndpoint(server);
  }

  private static void reply(HttpExchange exchange, int status, String body, String contentType) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", contentType);
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
