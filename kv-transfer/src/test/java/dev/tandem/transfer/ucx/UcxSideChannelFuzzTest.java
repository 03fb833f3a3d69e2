package dev.tandem.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.tandem.transfer.TransferAgent;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;

/**
 * Fuzz target for the UCX agent's side channel, a plain TCP port any local process can reach:
 * whatever bytes a peer sends, the agent answers or closes the connection within its timeout,
 * never lets an error other than I/O escape its connection thread, and still serves a well-formed
 * reader afterwards. Needs libucx0 (skipped without it). Committed inputs run with every test run;
 * {@code .ci/fuzz} fuzzes it for a bounded time.
 */
class UcxSideChannelFuzzTest {
  private static final List<Throwable> ESCAPED = new CopyOnWriteArrayList<>();
  private static TransferAgent agent;
  private static String host;
  private static int port;

  private static synchronized void start() {
    if (agent != null) {
      return;
    }
    UcxBackendProvider provider = new UcxBackendProvider();
    assumeTrue(provider.isAvailable(), provider.unavailableReason());
    Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
      ESCAPED.add(e);
      if (before != null) {
        before.uncaughtException(t, e);
      }
    });
    agent = new UcxTransferAgent("127.0.0.1");
    agent.register(Arena.global().allocate(4096));
    String[] a = agent.address().split(":");
    host = a[0];
    port = Integer.parseInt(a[1]);
  }

  /**
   * Skips the class where libucx0 is missing. Checked here, outside the fuzzing harness: inside it
   * Jazzer reports a failed assumption as a finding, so the check in {@link #start()} alone made
   * every committed input an error on a machine without UCX.
   */
  @BeforeAll
  static void needsUcx() {
    UcxBackendProvider provider = new UcxBackendProvider();
    assumeTrue(provider.isAvailable(), provider.unavailableReason());
  }

  @FuzzTest(maxDuration = "30s")
  void sideChannelBytes(byte[] bytes) throws IOException {
    // The target's own loopback connections (to the agent; the agent's to itself) are not the
    // server-side request forgery Jazzer watches for: allow those, and only those.
    try (var allowed = BugDetectors.allowNetworkConnections((h, p) -> h.equals("127.0.0.1") || h.equals("localhost"))) {
      start();
      exchange(bytes);
    }
  }

  private static void exchange(byte[] bytes) throws IOException {
    try (Socket s = new Socket(host, port)) {
      s.setSoLinger(true, 0); // no TIME_WAIT left per input: fuzzing opens thousands a second
      s.setSoTimeout(UcxSideChannel.TIMEOUT_MS);
      OutputStream out = s.getOutputStream();
      out.write(bytes);
      out.flush();
      s.shutdownOutput(); // the peer is done: the agent must finish and close, not wait
      InputStream in = s.getInputStream();
      try {
        while (in.read() >= 0) {
          // drain what it answers
        }
      } catch (SocketTimeoutException e) {
        throw new AssertionError("the side channel neither answered to the end nor closed within its timeout", e);
      } catch (IOException reset) {
        // closing on garbage is an answer
      }
    }
    assertTrue(ESCAPED.isEmpty(), "an error escaped a side-channel connection: " + ESCAPED);
    if ((bytes.length & 15) != 0) {
      return;
    }
    // Still serving (checked on every 16th input length): a ping is answered.
    try (Socket s = new Socket(host, port)) {
      s.setSoLinger(true, 0);
      s.setSoTimeout(UcxSideChannel.TIMEOUT_MS);
      s.getOutputStream().write(UcxSideChannel.OP_PING);
      s.getOutputStream().flush();
      assertTrue(s.getInputStream().read() == UcxSideChannel.OP_PING, "a ping after the input is answered");
    }
  }
}
