package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.mocker.TimingModel;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Hostile-but-fair clients against a real frontend (mocker workers, context 4,096 tokens): 2,000
 * idle connections and slowloris senders do not stop normal requests, and a prompt far past the
 * context window is refused while its body is still arriving — the rest is never read or kept.
 * Latency figures are printed; the benchmark in docs/reliability.md measures them.
 */
@org.junit.jupiter.api.Tag("e2e")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class AbuseTest {
  private static LocalDeployment deployment;
  private static HttpClient http;

  @BeforeAll
  static void start() {
    deployment = TestDeployments.start(2, TimingModel.noDelay(), 64 << 20);
    http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  }

  @AfterAll
  static void stop() {
    http.close();
    deployment.close();
  }

  private static HttpResponse<String> chat(String content) throws Exception {
    String body = "{\"model\":\"" + TestDeployments.MODEL + "\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}]}";
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + deployment.port() + "/v1/chat/completions"))
        .timeout(Duration.ofSeconds(10)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void idleConnectionsAndSlowlorisDoNotStopNormalRequests() throws Exception {
    List<Socket> idle = new ArrayList<>();
    List<Thread> slow = new ArrayList<>();
    try {
      for (int i = 0; i < 2_000; i++) {
        idle.add(new Socket("127.0.0.1", deployment.port()));
      }
      for (int i = 0; i < 8; i++) {
        Socket s = new Socket("127.0.0.1", deployment.port());
        idle.add(s);
        slow.add(Thread.ofVirtual().start(() -> {
          try {
            OutputStream out = s.getOutputStream();
            for (byte b : "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ".getBytes(StandardCharsets.US_ASCII)) {
              out.write(b);
              out.flush();
              Thread.sleep(200); // a header byte at a time, never finishing
            }
          } catch (Exception closed) {
            // the server gave up on it, or the test ended
          }
        }));
      }
      long worst = 0;
      for (int i = 0; i < 30; i++) {
        long t0 = System.nanoTime();
        HttpResponse<String> r = chat("hello number " + i);
        worst = Math.max(worst, System.nanoTime() - t0);
        assertEquals(200, r.statusCode(), r.body());
      }
      System.out.printf("abuse: 30 chats beside 2,000 idle and 8 slowloris connections, slowest %.1f ms%n", worst / 1e6);
    } finally {
      slow.forEach(Thread::interrupt);
      for (Socket s : idle) {
        s.close();
      }
    }
    assertEquals(200, chat("after").statusCode());
  }

  @Test
  void aHugePromptIsRefusedBeforeItsBodyHasArrived() throws Exception {
    long bodyBytes = 30L << 20; // 30 MB of "word word ..." in one message
    byte[] head = ("{\"model\":\"" + TestDeployments.MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\"").getBytes(StandardCharsets.US_ASCII);
    byte[] tail = "\"}]}".getBytes(StandardCharsets.US_ASCII);
    long words = (bodyBytes - head.length - tail.length) / 5;
    long length = head.length + words * 5 + tail.length;
    AtomicLong sent = new AtomicLong();
    try (Socket s = new Socket("127.0.0.1", deployment.port())) {
      s.setSoTimeout(20_000);
      OutputStream out = s.getOutputStream();
      out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + length + "\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      long t0 = System.nanoTime();
      Thread sender = Thread.ofVirtual().start(() -> {
        try {
          out.write(head);
          byte[] chunk = "word ".repeat(13_107).getBytes(StandardCharsets.US_ASCII); // 64 KiB
          for (long w = 0; w < words; w += 13_107) {
            out.write(chunk, 0, (int) Math.min(chunk.length, (words - w) * 5));
            sent.addAndGet(chunk.length);
            Thread.sleep(1); // a fast client, not an instant one
          }
          out.write(tail);
        } catch (Exception closed) {
          // refused and closed under it: expected
        }
      });
      InputStream in = s.getInputStream();
      String response = new String(in.readNBytes(12), StandardCharsets.US_ASCII);
      long answeredAfter = System.nanoTime() - t0;
      long sentWhenAnswered = sent.get();
      // The rest of the response, up to the end of its JSON body (the server closes after it).
      StringBuilder rest = new StringBuilder();
      for (int b; !rest.toString().endsWith("}") || !rest.toString().contains("\r\n\r\n{"); ) {
        if ((b = in.read()) < 0) {
          break;
        }
        rest.append((char) b);
      }
      sender.join(20_000);
      System.out.printf("abuse: a %d MB prompt refused after %.1f ms, %.1f MB of it sent%n", length >> 20, answeredAfter / 1e6, sentWhenAnswered / 1e6);
      assertEquals("HTTP/1.1 400", response, rest.toString());
      assertTrue(rest.toString().contains("context_length_exceeded"), rest.toString());
      assertTrue(sentWhenAnswered < length / 2, "refused while most of the body was still to come: " + sentWhenAnswered + " of " + length + " bytes sent");
    }
    assertEquals(200, chat("still serving").statusCode());
  }
}
