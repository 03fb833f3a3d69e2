package dev.tandem.worker;

import dev.tandem.common.FinishReason;
import dev.tandem.common.PrefillCost;
import dev.tandem.engine.Engine;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one thread that owns an {@link Engine}: it applies submitted requests, aborts and queries
 * between steps, steps while there is work, and hands each output to its request's listener.
 *
 * <p>Threading: {@link #submit}, {@link #abort}, {@link #call} and {@link #load} may be called from
 * any thread; listeners and the {@link KvEventLog} are invoked on the loop thread.
 */
public final class EngineLoop implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EngineLoop.class);
  private static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /** Receives one request's outputs on the loop thread. */
  public interface Listener {
    void onOutput(RequestOutput output);

    /** The request was refused or aborted; no further calls follow. */
    void onFailure(RuntimeException error);
  }

  /** Hears of every engine step, on the loop thread: how long it took and how many outputs it made. */
  public interface StepObserver {
    void step(long nanos, int outputs);
  }

  private final Engine engine;
  private final KvEventLog events;
  private volatile StepObserver stepObserver = (nanos, outputs) -> {};
  private final java.util.List<Runnable> loadWatchers = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
  private final Map<String, Listener> listeners = new HashMap<>(); // loop thread only
  private final Thread thread;
  private volatile boolean running = true;
  private volatile EngineLoad load;
  private volatile PrefillCost prefillCost = PrefillCost.UNKNOWN;
  private volatile dev.tandem.engine.SpeculationCounts speculation = dev.tandem.engine.SpeculationCounts.NONE;
  /** Exponentially weighted mean of recent steps' seconds (weight 0.1 for the newest); loop thread writes. */
  private volatile double stepSeconds;
  /** When the step in progress started (System.nanoTime), 0 between steps; loop thread writes. */
  private volatile long stepStartedNanos;

  public EngineLoop(Engine engine, KvEventLog events) {
    this.engine = engine;
    this.events = events;
    engine.setEventSink(events);
    this.load = engine.load();
    this.thread = Thread.ofPlatform().name("engine-loop").daemon().unstarted(this::run);
  }

  public EngineLoop start() {
    thread.start();
    return this;
  }

  public Engine engine() {
    return engine;
  }

  /** Queues a request; the listener hears of every output, or of the refusal. */
  public void submit(EngineRequest request, Listener listener) {
    submit(request, listener, null);
  }

  /** As {@link #submit(EngineRequest, Listener)}, running {@code afterAdd} on the engine right after it took the request. */
  public void submit(EngineRequest request, Listener listener, java.util.function.Consumer<Engine> afterAdd) {
    enqueue(
        () -> {
          try {
            engine.add(request);
            listeners.put(request.requestId(), listener);
            if (afterAdd != null) {
              afterAdd.accept(engine);
            }
          } catch (IllegalArgumentException e) {
            listeners.remove(request.requestId());
            listener.onFailure(e);
          }
        });
  }

  /**
   * Routes a request the engine already holds (e.g. an imported one) to {@code listener}. Loop
   * thread only: call it inside {@link #call}.
   */
  public void attach(String requestId, Listener listener) {
    if (Thread.currentThread() != thread) {
      throw new IllegalStateException("attach runs on the engine loop");
    }
    listeners.put(requestId, listener);
  }

  /**
   * Aborts a request; its listener gets an ABORTED output. Completes with whether it existed
   * (false at once when the loop has stopped: nothing runs there any more).
   */
  public CompletableFuture<Boolean> abort(String requestId) {
    if (!running) {
      return CompletableFuture.completedFuture(false);
    }
    return call(
        e -> {
          boolean found = e.abort(requestId);
          Listener l = listeners.remove(requestId);
          if (l != null) {
            l.onOutput(
                new RequestOutput(
                    requestId, new int[0], FinishReason.CANCELLED, 0, 0));
          }
          return found;
        });
  }

  /** Runs {@code query} on the loop thread between steps. */
  public <T> CompletableFuture<T> call(Function<Engine, T> query) {
    CompletableFuture<T> result = new CompletableFuture<>();
    enqueue(
        () -> {
          try {
            result.complete(query.apply(engine));
          } catch (RuntimeException e) {
            result.completeExceptionally(e);
          }
        });
    return result;
  }

  /** The engine's fitted prefill cost ({@link PrefillCost#UNKNOWN} if it does not measure one). */
  public PrefillCost prefillCost() {
    return prefillCost;
  }

  /** Speculative decoding's totals as of the last step. */
  public dev.tandem.engine.SpeculationCounts speculationCounts() {
    return speculation;
  }

  /** The load as of the last loop iteration. */
  public EngineLoad load() {
    return load;
  }

  /** Recent engine steps' mean duration in seconds (0 before the first step). */
  public double stepSeconds() {
    return stepSeconds;
  }

  /** How long the engine step in progress has run, in seconds; 0 between steps. Any thread. */
  public double stepRunningSeconds() {
    long started = stepStartedNanos;
    return started == 0 ? 0 : (System.nanoTime() - started) / 1e9;
  }

  /** Sets the one observer of engine steps (metrics). */
  public void observeSteps(StepObserver observer) {
    this.stepObserver = observer;
  }

  /**
   * Adds a callback run on the loop thread whenever the requests running or waiting, or the prompt
   * tokens queued, have changed since the last step: a load stream then reports at once instead of
   * at its next tick (it must only schedule work, not do it).
   */
  public void addLoadWatcher(Runnable watcher) {
    loadWatchers.add(watcher);
  }

  public void removeLoadWatcher(Runnable watcher) {
    loadWatchers.remove(watcher);
  }

  /** Has every load watcher report at once: something a report carries changed between steps (the LoRA adapters). */
  public void reportNow() {
    enqueue(() -> loadWatchers.forEach(Runnable::run));
  }

  public boolean isRunning() {
    return running && thread.isAlive();
  }

  private void enqueue(Runnable command) {
    if (!running) {
      throw new IllegalStateException("engine loop is stopped");
    }
    commands.add(command);
    LockSupport.unpark(thread);
  }

  private void run() {
    while (running) {
      Runnable command;
      while ((command = commands.poll()) != null) {
        command.run();
      }
      if (engine.hasWork()) {
        List<RequestOutput> outputs;
        long started = System.nanoTime();
        stepStartedNanos = started;
        try {
          outputs = engine.step();
          long took = System.nanoTime() - started;
          stepObserver.step(took, outputs.size());
          double s = took / 1e9;
          stepSeconds = stepSeconds == 0 ? s : 0.9 * stepSeconds + 0.1 * s;
        } catch (RuntimeException e) {
          log.error("engine step failed; failing every request in flight", e);
          failAll(e);
          continue;
        } finally {
          stepStartedNanos = 0;
        }
        events.flush();
        for (RequestOutput output : outputs) {
          Listener l =
              output.finished()
                  ? listeners.remove(output.requestId())
                  : listeners.get(output.requestId());
          if (l != null) {
            l.onOutput(output);
          }
        }
      } else {
        events.flush();
        refreshLoad();
        LockSupport.parkNanos(this, IDLE_PARK_NANOS);
        continue;
      }
      refreshLoad();
    }
    failAll(new IllegalStateException("worker is shutting down"));
  }

  private void refreshLoad() {
    EngineLoad before = load;
    load = engine.load();
    prefillCost = engine.prefillCost();
    speculation = engine.speculationCounts();
    if (load.runningRequests() != before.runningRequests() || load.waitingRequests() != before.waitingRequests()
        || load.queuedPrefillTokens() != before.queuedPrefillTokens()) {
      loadWatchers.forEach(Runnable::run);
    }
  }

  private void failAll(RuntimeException error) {
    for (var entry : Map.copyOf(listeners).entrySet()) {
      engine.abort(entry.getKey());
      entry.getValue().onFailure(error);
    }
    listeners.clear();
    events.flush();
  }

  @Override
  public void close() {
    running = false;
    LockSupport.unpark(thread);
    try {
      thread.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    engine.close();
  }
}
