package dev.tandem.router.grpc;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.WorkerId;
import dev.tandem.router.Generation;
import dev.tandem.router.KvCost;
import dev.tandem.router.KvSelector;
import dev.tandem.router.PredictedTtftCost;
import dev.tandem.router.LoadLedger;
import dev.tandem.router.LoadOrder;
import dev.tandem.router.NoWorkerAvailableException;
import dev.tandem.router.RequestRouter;
import dev.tandem.router.RouterMode;
import dev.tandem.router.Route;
import dev.tandem.router.TokenListener;
import dev.tandem.router.WorkerStatus;
import dev.tandem.router.RoutingRequest;
import dev.tandem.router.Selection;
import dev.tandem.router.Selectors;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.WorkerLoad;
import dev.tandem.router.WorkerSelector;
import dev.tandem.router.index.Overlap;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Optional;

/**
 * Sends each request to the worker its selector picks among the reachable workers, and reserves
 * the request's prefill and decode blocks there in the pool's {@link LoadLedger} until they are
 * done ({@link RoutedGeneration} drives the reservation). In {@code kv} mode it also owns the KV
 * index and its event subscriptions ({@link KvRouting}); with prefill workers, the split decision
 * ({@link Disaggregation}).
 *
 * <p>Thread-safe.
 */
public final class Router implements RequestRouter, AutoCloseable {
  private final WorkerPool pool;
  private final WorkerSelector selector;
  private final KvRouting kv;
  private final Disaggregation disagg;
  private final LoraUpdates lora;
  private final java.util.concurrent.atomic.AtomicLong predictedOverlapTokens = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong reroutes = new java.util.concurrent.atomic.AtomicLong();
  private volatile String discoveryName = "static";

  /**
   * How a router routes: the mode; in kv mode the cost ({@code null} for the default, {@link
   * PredictedTtftCost}), the block cost's weights and the temperature; whether to follow KV
   * events; and {@code split}, which decides per request whether to use a prefill worker.
   */
  public record Config(
      RouterMode mode,
      KvSelector.Weights weights,
      boolean useKvEvents,
      Duration missingEventsWindow,
      SplitPolicy split,
      KvCost cost) {
    public Config(RouterMode mode, KvSelector.Weights weights, boolean useKvEvents, Duration missingEventsWindow) {
      this(mode, weights, useKvEvents, missingEventsWindow, SplitPolicy.defaults(), null);
    }

    /** Defaults for a mode given by name ({@link RouterMode#parse}). */
    public static Config of(String mode) {
      return new Config(RouterMode.parse(mode), KvSelector.Weights.defaults(), true, Duration.ofSeconds(10));
    }

    public Config withSplit(SplitPolicy split) {
      return new Config(mode, weights, useKvEvents, missingEventsWindow, split, cost);
    }

    /** This KV cost instead of the default. */
    public Config withCost(KvCost cost) {
      return new Config(mode, weights, useKvEvents, missingEventsWindow, split, cost);
    }

    /** The cost kv mode minimises. */
    public KvCost kvCost() {
      return cost != null ? cost : PredictedTtftCost.defaults();
    }
  }

  /**
   * In kv mode, the generating workers in order of the cost's load key, brought up to date at each
   * decision from {@link #changed} (workers whose ledger or load report changed since), so that a
   * decision over a large pool prices only the workers that can win ({@link LoadOrder}).
   */
  private final LoadOrder order;
  private final Set<WorkerId> changed = ConcurrentHashMap.newKeySet();
  private final Map<WorkerId, WorkerClient> members = new ConcurrentHashMap<>();

  private Router(WorkerPool pool, WorkerSelector selector, KvRouting kv, SplitPolicy split) {
    this.pool = pool;
    this.selector = selector;
    this.kv = kv;
    this.disagg = new Disaggregation(pool, split);
    this.lora = new LoraUpdates(pool);
    this.order = selector instanceof KvSelector ks ? new LoadOrder(ks.kvCost(), pool.blockSize()) : null;
    if (order != null) {
      pool.ledger().onChange(changed::add);
      pool.onJoin(c -> {
        members.put(c.workerId(), c);
        c.onLoadReport(() -> changed.add(c.workerId()));
        changed.add(c.workerId());
      });
      pool.onLeave(c -> {
        members.remove(c.workerId(), c);
        changed.add(c.workerId());
      });
    }
  }

  /** Puts every changed worker's current load in the order (or takes it out: gone, or prefill-only). Under this router's lock. */
  private void refreshOrder() {
    for (var it = changed.iterator(); it.hasNext(); ) {
      WorkerId id = it.next();
      it.remove();
      WorkerClient c = members.get(id);
      if (c == null || c.isPrefillOnly()) {
        order.remove(id);
      } else {
        order.put(pool.load(c));
      }
    }
  }

  /** A router over {@code pool}; in kv mode it subscribes to every worker's KV events. */
  public static Router create(WorkerPool pool, Config config) {
    if (config.mode() != RouterMode.KV) {
      return new Router(pool, Selectors.byName(config.mode().cliName()), null, config.split());
    }
    KvRouting kv = new KvRouting(config.kvCost(), config.weights().temperature(), config.useKvEvents(), config.missingEventsWindow(), pool.timer());
    pool.onJoin(kv::attach);
    pool.onLeave(w -> kv.detach(w.workerId()));
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

  /** LoRA adapters loaded and unloaded across the pool while it serves. */
  public LoraUpdates lora() {
    return lora;
  }

  @Override
  public List<String> loraAdapters() {
    return lora.served();
  }

  @Override
  public List<WorkerId> loadLoraAdapter(String name, String path) {
    return lora.load(name, path);
  }

  @Override
  public List<WorkerId> unloadLoraAdapter(String name) {
    return lora.unload(name);
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
  @Override
  public Route route(GenerationRequest request, String pinnedWorker) {
    return route(request, pinnedWorker, ConcurrentHashMap.newKeySet());
  }

  /** Requests sent again to another worker after one refused them before any output. */
  public long reroutes() {
    return reroutes.get();
  }

  /**
   * Routes among the routable workers not in {@code tried}; the route may route again, adding to
   * {@code tried}, when its worker refuses the request before any output (it was draining or went
   * away): nothing was produced, so sending it elsewhere is safe.
   */
  private Route route(GenerationRequest request, String pinnedWorker, Set<WorkerId> tried) {
    String lora = request.loraName();
    List<WorkerClient> candidates = pool.routable().stream()
        .filter(w -> !w.isPrefillOnly() && !tried.contains(w.workerId()) && w.serves(lora)).toList();
    if (candidates.isEmpty() && lora != null
        && pool.routable().stream().anyMatch(w -> !w.isPrefillOnly() && !tried.contains(w.workerId()))) {
      throw new NoWorkerAvailableException("no reachable decode or aggregated worker serves LoRA adapter '" + lora + "'", false);
    }
    if (candidates.isEmpty()) {
      throw new NoWorkerAvailableException(
          pool.all().isEmpty()
              ? "no worker is registered"
              : pool.all().stream().allMatch(WorkerClient::isPrefillOnly)
                  ? "only prefill workers are registered; decode or aggregated workers generate tokens"
                  : !tried.isEmpty()
                      ? "no other decode or aggregated worker is reachable (tried " + tried + ")"
                      : pool.reachable().stream().anyMatch(w -> !w.isPrefillOnly())
                          ? "every decode or aggregated worker is draining"
                          : "no decode or aggregated worker is reachable",
          tried.isEmpty());
    }
    if (pinnedWorker != null) {
      candidates = candidates.stream().filter(c -> c.workerId().value().equals(pinnedWorker)).toList();
      if (candidates.isEmpty()) {
        throw new IllegalArgumentException("no reachable worker has id '" + pinnedWorker + "'");
      }
    }
    RoutedGeneration.Reroute reroute =
        pinnedWorker != null ? null : () -> {
          reroutes.incrementAndGet();
          return route(request, null, tried);
        };
    int[] tokens = request.promptTokens();
    RoutingRequest routing =
        new RoutingRequest(
            request.requestId(), tokens.length, BlockHasher.sequenceHashes(tokens, pool.blockSize(), request.hashSalt()), pool.blockSize());
    // Selection and reservation happen together, so that requests arriving at once see each
    // other's load instead of all picking the same idle worker.
    synchronized (this) {
      Selection selection = null;
      WorkerClient chosen = null;
      if (order != null && pinnedWorker == null) {
        refreshOrder();
        Set<WorkerId> eligible = tried;
        try {
          selection = ((KvSelector) selector).select(routing, order, w -> {
            WorkerClient c = members.get(w);
            return c != null && c.routable() && !c.isPrefillOnly() && !eligible.contains(w) && c.serves(lora);
          });
          chosen = members.get(selection.worker());
        } catch (IllegalArgumentException notYetInTheOrder) {
          selection = null; // a worker admitted a moment ago, before its join reached this router: decide over the list
        }
      }
      if (selection == null) {
        List<WorkerLoad> loads = candidates.stream().map(pool::load).toList();
        selection = selector.select(routing, loads);
        for (WorkerClient c : candidates) {
          if (c.workerId().equals(selection.worker())) {
            chosen = c;
          }
        }
      }
      if (chosen == null) {
        throw new IllegalStateException("selector " + selector.name() + " chose a non-candidate " + selection.worker());
      }
      Overlap predicted = selection.predictedOverlap();
      predictedOverlapTokens.addAndGet((long) predicted.blocks() * pool.blockSize());
      if (kv != null) {
        kv.routed(chosen.workerId(), routing.blockHashes(), predicted.blocks());
      }
      int promptBlocks = routing.promptBlocks();
      int prefill = Math.max(0, promptBlocks - predicted.blocks());
      Disaggregation.Split split = disagg.consider(request, routing, chosen, selection, selector);
      LoadLedger ledger = pool.ledger();
      if (split != null && split.prefill() != null) {
        // The prefill worker computes the prompt; the decode worker only holds its blocks.
        return new RoutedGeneration(
            chosen, split.request(request),
            ledger.reserveSplit(chosen.workerId(), promptBlocks, split.prefill().workerId(), split.prefillBlocks()),
            selection, split.decision(), tried, reroute);
      }
      return new RoutedGeneration(
          chosen, request, ledger.reserve(chosen.workerId(), prefill, promptBlocks), selection,
          split == null ? null : split.decision(), tried, reroute);
    }
  }

  /** Prompt tokens this router expected its chosen workers to hold, over every request routed. */
  public long predictedOverlapTokens() {
    return predictedOverlapTokens.get();
  }

  /** Routes and starts a generation. */
  public Generation generate(GenerationRequest request, TokenListener listener) {
    return route(request, null).start(listener);
  }

  @Override
  public int blockSize() {
    return pool.blockSize();
  }

  @Override
  public String mode() {
    return selector.name();
  }

  @Override
  public List<WorkerStatus> workers() {
    var silent = kv == null ? java.util.Set.<dev.tandem.common.WorkerId>of() : kv.workersWithoutEvents();
    return pool.all().stream()
        .map(w -> new WorkerStatus(w.description(), w.address(), w.reachable(), w.lastLoadReport(), silent.contains(w.workerId())))
        .toList();
  }

  @Override
  public Map<String, String> refusedWorkers() {
    return pool.refused();
  }

  @Override
  public String discovery() {
    return discoveryName;
  }

  /** Names where this router's workers are found, for {@code /health}. */
  public void describeDiscovery(String where) {
    this.discoveryName = where;
  }

  @Override
  public Duration missingEventsWindow() {
    return kv == null ? null : kv.missingEventsWindow();
  }

  @Override
  public void close() {
    disagg.close();
    if (kv != null) {
      kv.close();
    }
  }
}
