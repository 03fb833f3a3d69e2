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
 * A worker's small HTTP port: {@code GET /metrics} (Prometheus text) and {@code GET /health}; 404
 * otherwise, 405 for other methods. The JDK's HTTP server on one virtual thread per exchange.
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
  static MetricsEndpoint start(String host, int port, Supplier<String> metrics, Supplier<Boolean> healthy) {
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 16);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot listen for metrics on " + host + ":" + port + ": " + e.getMessage(), e);
    }
    server.createContext("/", exchange -> {
      try (exchange) {
        if (!exchange.getRequestMethod().equals("GET")) {
          reply(exchange, 405, "use GET\n", "text/plain");
        } else {
          switch (exchange.getRequestURI().getPath()) {
            case "/metrics" -> reply(exchange, 200, metrics.get(), "text/plain; version=0.0.4; charset=utf-8");
            case "/health" -> {
              boolean ok = healthy.get();
              reply(exchange, ok ? 200 : 503, ok ? "{\"status\":\"serving\"}\n" : "{\"status\":\"stopped\"}\n", "application/json");
            }
            default -> reply(exchange, 404, "not found; try /metrics\n", "text/plain");
          }
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
