package dev.tandem.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The worker's metrics port over a real socket: what it serves, and who may drain the worker. */
class MetricsEndpointTest {
  private static HttpResponse<String> send(MetricsEndpoint e, String method, String path) throws Exception {
    try (HttpClient c = HttpClient.newHttpClient()) {
      return c.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + e.port() + path))
          .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    }
  }

  @Test
  void postDrainStartsADrain() throws Exception {
    CountDownLatch drained = new CountDownLatch(1);
    try (MetricsEndpoint e = MetricsEndpoint.start("127.0.0.1", 0, () -> "m 1\n", () -> "serving", drained::countDown)) {
      assertEquals(405, send(e, "GET", "/drain").statusCode());
      assertEquals(202, send(e, "POST", "/drain").statusCode());
      assertTrue(drained.await(5, TimeUnit.SECONDS));
      assertEquals("m 1\n", send(e, "GET", "/metrics").body());
    }
  }

  @Test
  void withoutADrainHandlerAsUnderMutualTlsPostDrainIsRefused() throws Exception {
    try (MetricsEndpoint e = MetricsEndpoint.start("127.0.0.1", 0, () -> "", () -> "serving", null)) {
      HttpResponse<String> r = send(e, "POST", "/drain");
      assertEquals(403, r.statusCode());
      assertTrue(r.body().contains("SIGTERM"), r.body());
      assertEquals(200, send(e, "GET", "/health").statusCode(), "still serving");
      assertFalse(send(e, "GET", "/health").body().contains("draining"));
    }
  }
}
