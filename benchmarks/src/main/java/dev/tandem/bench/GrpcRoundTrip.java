package dev.tandem.bench;

import dev.tandem.common.WorkerId;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.router.TokenListener;
import dev.tandem.router.grpc.WorkerClient;
import dev.tandem.worker.WorkerServer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;

/**
 * The floor under the frontend's overhead: time from sending a Generate call to a zero-delay
 * mocker worker over loopback gRPC (in one process) to its first chunk, next to the worker's own
 * TTFT. Everything the frontend adds beyond this is HTTP parsing, routing and SSE.
 *
 * <p>Run: {@code java -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
 * dev.tandem.bench.GrpcRoundTrip [requests]}
 */
public final class GrpcRoundTrip {
  private GrpcRoundTrip() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
    MockerConfig config = MockerConfig.defaults().withTiming(TimingModel.noDelay());
    try (WorkerServer worker = WorkerServer.start(WorkerServer.Config.local(new WorkerId("rt")), new MockerEngine(config));
        WorkerClient client = WorkerClient.connect(worker.address(), Duration.ofSeconds(10))) {
      int[] prompt = new int[128];
      for (int i = 0; i < prompt.length; i++) {
        prompt[i] = 1000 + i;
      }
      for (int round = 0; round < 3; round++) {
        double[] roundTrip = new double[n];
        double[] workerTtft = new double[n];
        for (int i = 0; i < n; i++) {
          CompletableFuture<Long> first = new CompletableFuture<>();
          long t0 = System.nanoTime();
          var request = new GenerationRequest(round + "-" + i, prompt, SamplingParams.greedy(), StopConditions.maxTokens(1));
          client.generate(request, new TokenListener() {
            @Override
            public void onChunk(TokenChunk chunk) {
              first.complete(chunk.origin().workerTtftMicros());
            }

            @Override
            public void onError(GenerationException error) {
              first.completeExceptionally(error);
            }

            @Override
            public void onCompleted() {}
          });
          workerTtft[i] = first.get() / 1e3;
          roundTrip[i] = (System.nanoTime() - t0) / 1e6;
        }
        Arrays.sort(roundTrip);
        Arrays.sort(workerTtft);
        System.out.printf(Locale.ROOT, "round %d (%s): first chunk over gRPC p50 %.3f ms p99 %.3f ms; worker TTFT p50 %.3f ms%n",
            round, round == 0 ? "warm-up" : "measured", roundTrip[n / 2], roundTrip[n * 99 / 100], workerTtft[n / 2]);
      }
    }
  }
}
