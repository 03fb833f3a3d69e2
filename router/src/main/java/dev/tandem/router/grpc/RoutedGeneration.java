package dev.tandem.router.grpc;

import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.TokenChunk;
import dev.tandem.router.Generation;
import dev.tandem.router.LoadLedger;
import dev.tandem.router.Route;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.TokenListener;

/**
 * A routed request: the worker, the request to send it (naming the prefill worker when split), and
 * its {@link LoadLedger.Reservation}. This class is where the reservation's lifecycle is driven:
 * the first chunk ends the prefill part, the last chunk, an error, the stream's end or a cancel
 * release it — before the listener hears of it, so that a client's next request is not routed
 * against the load of the one it has just seen finish — and {@link #release} releases it when the
 * request is never started. The ledger makes every later release a no-op.
 */
final class RoutedGeneration implements Route {
  private final WorkerClient worker;
  private final GenerationRequest request;
  private final LoadLedger.Reservation reservation;
  private final int predictedOverlapBlocks;
  private final dev.tandem.router.Selection selection;
  private final SplitPolicy.Decision decision;

  RoutedGeneration(
      WorkerClient worker,
      GenerationRequest request,
      LoadLedger.Reservation reservation,
      dev.tandem.router.Selection selection,
      SplitPolicy.Decision decision) {
    this.worker = worker;
    this.request = request;
    this.reservation = reservation;
    this.predictedOverlapBlocks = selection.predictedOverlap().blocks();
    this.selection = selection;
    this.decision = decision;
  }

  @Override
  public dev.tandem.common.WorkerId worker() {
    return worker.workerId();
  }

  @Override
  public int predictedOverlapBlocks() {
    return predictedOverlapBlocks;
  }

  @Override
  public double predictedCost() {
    return selection.cost();
  }

  @Override
  public String costName() {
    return selection.costName();
  }

  @Override
  public SplitPolicy.Decision decision() {
    return decision;
  }

  @Override
  public Generation start(TokenListener listener) {
    Generation call;
    try {
      call =
          worker.generate(
              request,
              new TokenListener() {
                @Override
                public void onChunk(TokenChunk chunk) {
                  reservation.firstToken();
                  if (chunk.finished()) {
                    reservation.release();
                  }
                  listener.onChunk(chunk);
                }

                @Override
                public void onError(GenerationException error) {
                  reservation.release();
                  listener.onError(error);
                }

                @Override
                public void onCompleted() {
                  reservation.release();
                  listener.onCompleted();
                }
              });
    } catch (RuntimeException e) {
      reservation.release();
      throw e;
    }
    return reason -> {
      call.cancel(reason);
      reservation.release();
    };
  }

  @Override
  public void release() {
    reservation.release();
  }
}
