package dev.tandem.router.grpc;

import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * A fake worker's load stream for router tests: a report every interval the router asked for, as
 * real workers send them (a worker silent for long is taken for stopped), until the call ends.
 */
final class FakeLoadStream {
  private static final ScheduledExecutorService REPORTS =
      Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().factory());

  private FakeLoadStream() {}

  /** Sends {@code report} every interval while {@code silent} is false. */
  static void serve(WatchLoadRequest request, StreamObserver<LoadReport> out, Supplier<LoadReport> report, BooleanSupplier silent) {
    var call = (ServerCallStreamObserver<LoadReport>) out;
    var task = REPORTS.scheduleAtFixedRate(() -> {
      if (!call.isCancelled() && !silent.getAsBoolean()) {
        call.onNext(report.get());
      }
    }, 0, Math.max(10, request.getIntervalMs()), TimeUnit.MILLISECONDS);
    call.setOnCancelHandler(() -> task.cancel(false));
  }
}
