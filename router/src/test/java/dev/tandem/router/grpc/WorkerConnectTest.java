package dev.tandem.router.grpc;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** A worker that cannot be reached at start: the error says why in words, over real gRPC channels. */
class WorkerConnectTest {
  @Test
  void aPortNothingListensOnIsSaidToRefuse() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // free once closed
    }
    String address = "127.0.0.1:" + port;
    var e = assertThrows(IllegalStateException.class, () -> WorkerClient.connect(address, Duration.ofSeconds(1)));
    assertTrue(e.getMessage().startsWith("worker at " + address + " did not answer within 1.0 s (connection refused"), e.getMessage());
  }

  @Test
  void aHostNameThatDoesNotResolveIsSaidToNotResolveWhileWaitingAndAtTheEnd() {
    Logger logger = (Logger) LoggerFactory.getLogger(WorkerClient.class);
    Level level = logger.getLevel();
    ListAppender<ILoggingEvent> said = new ListAppender<>();
    said.start();
    logger.addAppender(said);
    logger.setLevel(Level.INFO);
    try {
      // .invalid never resolves (RFC 2606).
      String address = "worker.invalid:9000";
      var e = assertThrows(IllegalStateException.class,
          () -> WorkerClient.connect(address, WorkerClient.channel(address, null), Duration.ofSeconds(2), Duration.ofMillis(500)));
      assertTrue(e.getMessage().contains("did not answer within 2.0 s (its host name does not resolve)"), e.getMessage());
      List<String> waiting = said.list.stream().map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("has not answered yet")).toList();
      assertTrue(waiting.size() >= 2, "said while waiting: " + waiting);
      assertTrue(waiting.getLast().startsWith("worker at " + address + " has not answered yet (its host name does not resolve); waiting up to"),
          waiting.getLast());
    } finally {
      logger.detachAppender(said);
      logger.setLevel(level);
    }
  }
}
