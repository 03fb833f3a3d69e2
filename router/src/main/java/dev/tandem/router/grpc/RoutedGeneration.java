package dev.tandem.router.grpc;

import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.WorkerId;
import dev.tandem.router.Generation;
import dev.tandem.router.LoadLedger;
import dev.tandem.router.Route;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.TokenListener;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A routed request: the worker, the request to send it (naming the prefill worker when split), and
 * its {@link LoadLedger.Reservation}. This class is where the reservation's lifecycle is driven:
 * the first chunk ends the prefill part, the last chunk, an error, the stream's end or a cancel
 * release it — before the listener hears of it, so that a client's next request is not routed
 * against the load of the one it has just seen finish — and {@link #release} releases it when the
 * request is never started. The ledger makes every later release a no-op. A worker that refuses
 * the request before any output (UNAVAILABLE: draining, or gone) has its reservation released and
 * the request routed again to a worker not tried yet, at most {@link #MAX_REROUTES} times; the
 * listener sees only the output of the worker that took it.
 */
final class RoutedGeneration implements Route {
  private static final Logger log = LoggerFactory.getLogger(RoutedGeneration.class);
  /** How many other workers a request refused before any output is tried on. */
  static final int MAX_REROUTES = 3;

  /** Routes the same request again among the workers not tried yet. */
  interface Reroute {
    /** @throws dev.tandem.router.NoWorkerAvailableException if none is left */
    Route next();
  }

  private final WorkerClient worker;
  private final GenerationRequest request;
  private final LoadLedger.Reservation reservation;
  private final int predictedOverlapBlocks;
  private final dev.tandem.router.Selection selection;
  private final SplitPolicy.Decision decision;
  private final Set<WorkerId> tried;
  private final Reroute reroute; // null: never (a pinned request)

  RoutedGeneration(
      WorkerClient worker,
      GenerationRequest request,
      LoadLedger.Reservation reservation,
      dev.tandem.router.Selection selection,
      SplitPolicy.Decision decision,
      Set<WorkerId> tried,
      Reroute reroute) {
    this.worker = worker;
    this.request = request;
    this.reservation = reservation;
    this.predictedOverlapBlocks = selection.predictedOverlap().blocks();
    this.selection = selection;
    this.decision = decision;
    this.tried = tried;
    this.reroute = reroute;
    tried.add(worker.workerId());
  }

  @Override
  public WorkerId worker() {
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
    AtomicBoolean cancelled = new AtomicBoolean();
    AtomicReference<Generation> current = new AtomicReference<>();
    Generation call;
    try {
      call =
          worker.generate(
              request,
              new TokenListener() {
                private volatile boolean sawChunk;

                @Override
                public void onChunk(TokenChunk chunk) {
                  sawChunk = true;
                  reservation.firstToken();
                  if (chunk.finished()) {
                    reservation.release();
                  }
                  listener.onChunk(chunk);
                }

                @Override
                public void onError(GenerationException error) {
                  reservation.release();
                  if (!sawChunk && !cancelled.get() && refusedBeforeOutput(error)) {
                    Route next = nextRoute(error);
                    if (next != null) {
                      current.set(next.start(listener));
                      if (cancelled.get()) {
                        current.get().cancel("cancelled while rerouting");
                      }
                      return;
                    }
                  }
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
    current.compareAndSet(null, call);
    return reason -> {
      cancelled.set(true);
      current.get().cancel(reason);
      reservation.release();
    };
  }

  /** UNAVAILABLE before any output: the worker was draining, or went away before it began. */
  private static boolean refusedBeforeOutput(GenerationException error) {
    return error.kind() == GenerationException.Kind.UNAVAILABLE && "UNAVAILABLE".equals(error.code());
  }

  /** Another route for the request, or null (no reroute allowed or no worker left). */
  private Route nextRoute(GenerationException error) {
    if (reroute == null || tried.size() > MAX_REROUTES) {
      return null;
    }
    try {
      Route next = reroute.next();
      log.info("request {}: worker {} refused it before any output ({}); sent to {} instead",
          request.requestId(), worker.workerId(), error.getMessage(), next.worker());
      return next;
    } catch (RuntimeException none) {
      log.info("request {}: worker {} refused it before any output ({}) and no other worker can take it: {}",
          request.requestId(), worker.workerId(), error.getMessage(), none.getMessage());
      return null;
    }
  }

  @Override
  public void release() {
    reservation.release();
  }
}
