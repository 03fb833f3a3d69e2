package dev.tandem.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerId;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.StopConditions;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** A worker's own metrics port, scraped over HTTP after it served a request. */
class WorkerMetricsTest {
  private static double value(String scrape, String series) {
    Matcher m = Pattern.compile("^" + Pattern.quote(series) + " (\\S+)$", Pattern.MULTILINE).matcher(scrape);
    assertTrue(m.find(), series + " in\n" + scrape);
    return Double.parseDouble(m.group(1));
  }

  @Test
  void theMetricsPortShowsEngineStepsKvBlocksAndQueueDepth() throws Exception {
    var engine = new MockerEngine(MockerConfig.defaults().withTiming(TimingModel.noDelay()).withPool(256, 16));
    try (WorkerServer worker = WorkerServer.start(WorkerServer.Config.local(new WorkerId("m0")).withMetricsPort(0), engine)) {
      ManagedChannel channel = NettyChannelBuilder.forTarget(worker.address()).usePlaintext().build();
      try {
        var request = GenerateRequest.newBuilder().setRequestId("r").setStop(StopConditions.newBuilder().setMaxTokens(5));
        IntStream.range(0, 40).forEach(i -> request.addTokenIds(100 + i));
        WorkerGrpc.newBlockingStub(channel).generate(request.build()).forEachRemaining(c -> {});
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      HttpClient http = HttpClient.newHttpClient();
      URI base = URI.create("http://127.0.0.1:" + worker.metricsPort());
      HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(base.resolve("/metrics")).build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, metrics.statusCode());
      String scrape = metrics.body();
      assertTrue(value(scrape, "tandem_worker_engine_step_seconds_count{worker=\"m0\"}") >= 5, "one step per token at least");
      assertTrue(value(scrape, "tandem_worker_engine_step_outputs_total{worker=\"m0\"}") >= 5);
      assertEquals(256, value(scrape, "tandem_worker_engine_kv_blocks_capacity{worker=\"m0\"}"));
      assertEquals(0, value(scrape, "tandem_worker_engine_waiting_requests{worker=\"m0\"}"));
      assertTrue(!scrape.contains("tandem_worker_kv_transfer"), "no transfer agent, no transfer meters");
      assertEquals(200, http.send(HttpRequest.newBuilder(base.resolve("/health")).build(), HttpResponse.BodyHandlers.ofString()).statusCode());
      assertEquals(404, http.send(HttpRequest.newBuilder(base.resolve("/other")).build(), HttpResponse.BodyHandlers.ofString()).statusCode());
    }
  }
}
