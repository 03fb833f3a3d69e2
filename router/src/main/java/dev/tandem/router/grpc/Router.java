package dev.tandem.router.grpc;

import dev.tandem.common.BlockHasher;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.router.KvSelector;
import dev.tandem.router.RoutingRequest;
import dev.tandem.router.Selection;
import dev.tandem.router.Selectors;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.WorkerLoad;
import dev.tandem.router.WorkerSelector;
import dev.tandem.router.index.Overlap;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Sends each request to the worker its selector picks among the reachable workers, and accounts
 * the request's prefill and decode blocks to that worker until they are done. In {@code kv} mode
 * it also owns the KV index and its event subscriptions ({@link KvRouting}).
 *
 * <p>Thread-safe.
 */
public final class Router implements AutoCloseable {
  private final WorkerPool pool;
  private final WorkerSelector selector;
  private final KvRouting kv;
  private final Disaggregation disagg;

  /** How a router routes; {@code split} decides per request whether to use a prefill worker. */
  public record Config(
      String mode, KvSelector.Weights weights, boolean useKvEvents, Duration missingEventsWindow, SplitPolicy split) {
    public Config(String mode, KvSelector.Weights weights, boolean useKvEvents, Duration missingEventsWindow) {
      this(mode, weights, useKvEvents, missingEventsWindow, SplitPolicy.defaults());
    }

    public static Config of(String mode) {
      return new Config(mode, KvSelector.Weights.defaults(), true, Duration.ofSeconds(10));
    }

    public Config withSplit(SplitPolicy split) {
      return new Config(mode, weights, useKvEvents, missingEventsWindow, split);
    }
  }

  /**
   * Where a request goes, what the router expects there, and the load it reserved there. {@code
   * request} is what to send (with {@code remote_prefill} set when {@code prefill} is chosen);
   * {@link #start} sends it, {@link #release} gives the reservations back if it is not sent.
   */
  public record Routed(
      WorkerClient worker,
      Overlap predictedOverlap,
      WorkerClient.Reservation reservation,
      GenerateRequest request,
      WorkerClient prefill,
      WorkerClient.Reservation prefillReservation,
      SplitPolicy.Decision decision) {
    /** Sends the request; the prefill worker's reservation ends with the first chunk. */
    public WorkerClient.GenerationCall start(WorkerClient.GenerationListener listener) {
      if (prefillReservation == null) {
        return worker.generate(request, reservation, listener);
      }
      return worker.generate(
          request,
          reservation,
          new WorkerClient.GenerationListener() {
            @Override
            public void onChunk(dev.tandem.proto.worker.v1.GenerateChunk chunk) {
              prefillReservation.release();
              listener.onChunk(chunk);
            }

            @Override
            public void onError(Throwable error) {
              prefillReservation.release();
              listener.onError(error);
            }

            @Override
            public void onCompleted() {
              prefillReservation.release();
              listener.onCompleted();
            }
          });
    }

    public void release() {
      reservation.release();
      if (prefillReservation != null) {
        prefillReservation.release();
      }
    }
  }

  private Router(WorkerPool pool, WorkerSelector selector, KvRouting kv, SplitPolicy split) {
    this.pool = pool;
    this.selector = selector;
    this.kv = kv;
    this.disagg = new Disaggregation(pool, split);
  }

  /** A router over {@code pool}; in kv mode it subscribes to every worker's KV events. */
  public static Router create(WorkerPool pool, Config config) {
    String mode = Selectors.mode(config.mode());
    if (!mode.equals(Selectors.KV)) {
      return new Router(pool, Selectors.byName(mode), null, config.split());
    }
    KvRouting kv = new KvRouting(config.weights(), config.useKvEvents(), config.missingEventsWindow(), pool.timer());
    pool.onJoin(kv::attach);
    return new Router(pool, kv.selector(), kv, config.split());
  }

  /** A router with a given load-only selector (tests). */
  public Router(WorkerPool pool, WorkerSelector selector) {
    this(pool, selector, null, new SplitPolicy(SplitPolicy.Mode.NEVER, 0));
  }

  /** Disaggregation state: measured links, the split policy and its counts. */
  public Disaggregation disaggregation() {
    return disagg;
  }

  public WorkerPool pool() {
    return pool;
  }

  public WorkerSelector selector() {
    return selector;
  }

  /** The KV routing state, in kv mode. */
  public Optional<KvRouting> kv() {
    return Optional.ofNullable(kv);
  }

  /**
   * Picks a worker ({@code pinnedWorker}, when given, must be reachable) and accounts the request
   * to it.
   *
   * @throws NoWorkerAvailableException if no worker is reachable
   * @throws IllegalArgumentException if the pinned worker is not reachable
   */
  public Routed route(GenerateRequest request, String pinnedWorker) {
    List<WorkerClient> candidates = pool.reachable().stream().filter(w -> !w.isPrefillOnly()).toList();
    if (candidates.isEmpty()) {
      throw new NoWorkerAvailableException(
          pool.all().isEmpty()
              ? "no worker is registered"
              : pool.all().stream().allMatch(WorkerClient::isPrefillOnly)
                  ? "only prefill workers are registered; decode or aggregated workers generate tokens"
                  : "no decode or aggregated worker is reachable");
    }
    if (pinnedWorker != null) {
      candidates = candidates.stream().filter(c -> c.workerId().value().equals(pinnedWorker)).toList();
      if (candidates.isEmpty()) {
        throw new IllegalArgumentException("no reachable worker has id '" + pinnedWorker + "'");
      }
    }
    int[] tokens = request.getTokenIdsList().stream().mapToInt(Integer::intValue).toArray();
    RoutingRequest routing =
        new RoutingRequest(
            request.getRequestId(), tokens, BlockHasher.sequenceHashes(tokens, pool.blockSize()), pool.blockSize());
    // Selection and reservation happen together, so that requests arriving at once see each
    // other's load instead of all picking the same idle worker.
    synchronized (this) {
      List<WorkerLoad> loads = candidates.stream().map(WorkerClient::load).toList();
      Selection selection = selector.select(routing, loads);
      WorkerClient chosen = null;
      for (WorkerClient c : candidates) {
        if (c.workerId().equals(selection.worker())) {
          chosen = c;
        }
      }
      if (chosen == null) {
        throw new IllegalStateException("selector " + selector.name() + " chose a non-candidate " + selection.worker());
      }
      Overlap predicted = selection.predictedOverlap();
      if (kv != null) {
        kv.routed(chosen.workerId(), routing.blockHashes(), predicted.blocks());
      }
      int promptBlocks = routing.promptBlocks();
      int prefill = Math.max(0, promptBlocks - predicted.blocks());
      Disaggregation.Split split = disagg.consider(request, routing, chosen, predicted, selector);
      if (split != null && split.prefill() != null) {
        // The prefill worker computes the prompt; the decode worker only holds its blocks.
        return new Routed(
            chosen, predicted, chosen.reserve(0, promptBlocks), split.request(request),
            split.prefill(), split.prefill().reserve(split.prefillBlocks(), 0), split.decision());
      }
      return new Routed(
          chosen, predicted, chosen.reserve(prefill, promptBlocks), request, null, null, split == null ? null : split.decision());
    }
  }

  /** Routes and starts a generation. */
  public WorkerClient.GenerationCall generate(GenerateRequest request, WorkerClient.GenerationListener listener) {
    return route(request, null).start(listener);
  }

  @Override
  public void close() {
    disagg.close();
    if (kv != null) {
      kv.close();
    }
  }

  /** No worker can take a request now. */
  public static final class NoWorkerAvailableException extends RuntimeException {
    public NoWorkerAvailableException(String message) {
      super(message);
    }
  }
}
