package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.worker.WorkerServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** A client that hangs up mid-stream must free its request and KV blocks on the worker. */
@org.junit.jupiter.api.Tag("e2e")
class ClientDisconnectTest {
  @Test
  void disconnectMidStreamCancelsOnTheWorker() throws Exception {
    try (LocalDeployment d = TestDeployments.start(1, TimingModel.realTime(), 1 << 20)) {
      WorkerServer worker = d.workers().getFirst();
      String body = """
          {"model": "%s", "messages": [{"role": "user", "content": "write a very long story"}],
           "max_tokens": 3000, "ignore_eos": true, "stream": true}""".formatted(TestDeployments.MODEL);
      try (Socket s = new Socket("127.0.0.1", d.port())) {
        OutputStream out = s.getOutputStream();
        out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
            + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        int contentChunks = 0;
        String line;
        while (contentChunks < 3 && (line = in.readLine()) != null) {
          if (line.startsWith("data: ") && line.contains("\"content\":\"") && !line.contains("\"content\":\"\"")) {
            contentChunks++;
          }
        }
        assertEquals(3, contentChunks);
        assertEquals(1, TestDeployments.activeRequests(worker), "the request is running on the worker");
        assertTrue(TestDeployments.usedBlocks(worker) > 0);
      }
      // The socket is closed: the frontend cancels the gRPC stream and the worker aborts.
      TestDeployments.assertPoolsFull(d);
    }
  }
}
