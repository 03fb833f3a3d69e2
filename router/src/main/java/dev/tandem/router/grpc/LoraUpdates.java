package dev.tandem.router.grpc;

import dev.tandem.common.WorkerId;
import dev.tandem.router.NoWorkerAvailableException;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * LoRA adapters loaded and unloaded while a pool serves (vLLM's {@code /v1/load_lora_adapter} and
 * {@code /v1/unload_lora_adapter}, for every worker at once). A load goes to every reachable worker,
 * prefill workers too (they compute prompts with it), and either all of them take it or none keeps
 * it; a worker that joins later is given the adapters loaded here. An unload goes to every worker
 * that has the adapter: each stops taking requests for it at once and lets the running ones finish.
 * Workers' load reports carry their adapters to every router; a call returns once this router's
 * reports show the change, so a request sent after it is routed by it.
 *
 * <p>Thread-safe; one update at a time (a worker joining meanwhile is not held up by it).
 */
public final class LoraUpdates {
  private static final Logger log = LoggerFactory.getLogger(LoraUpdates.class);
  /** How long a worker may take to read an adapter (a large one from a slow disk). */
  static final Duration CALL_TIMEOUT = Duration.ofMinutes(2);
  /** How long a change may take to show in the load reports before the call returns anyway. */
  private static final Duration SEEN_WITHIN = Duration.ofSeconds(10);

  private final WorkerPool pool;
  private final Map<String, String> loaded = new java.util.concurrent.ConcurrentHashMap<>(); // through this router: name → path
  private final Object updates = new Object(); // held by each load and unload, for as long as the workers take

  LoraUpdates(WorkerPool pool) {
    this.pool = pool;
    pool.onJoin(this::giveLoaded);
  }

  /**
   * The adapters requests may name now: those of every reachable worker that generates, in the
   * order first listed.
   */
  public List<String> served() {
    var names = new LinkedHashSet<String>();
    for (WorkerClient w : pool.reachable()) {
      if (!w.isPrefillOnly()) {
        names.addAll(w.loraAdapters());
      }
    }
    return List.copyOf(names);
  }

  /**
   * Loads the adapter at {@code path} (on the workers' file system) as {@code name} on every
   * reachable worker that lacks it.
   *
   * @return the workers that loaded it
   * @throws IllegalArgumentException if every reachable worker has it already, or a worker refused
   *     it (its message names the worker and why; the workers that took it have unloaded it again)
   * @throws NoWorkerAvailableException if no worker is reachable, or one did not answer
   */
  public List<WorkerId> load(String name, String path) {
    synchronized (updates) {
      return loadOnAll(name, path);
    }
  }

  private List<WorkerId> loadOnAll(String name, String path) {
    List<WorkerClient> reachable = pool.reachable();
    if (reachable.isEmpty()) {
      throw new NoWorkerAvailableException("no worker is reachable to load LoRA adapter '" + name + "' on");
    }
    List<WorkerClient> targets = reachable.stream().filter(w -> !w.serves(name)).toList();
    if (targets.isEmpty()) {
      throw new IllegalArgumentException("LoRA adapter '" + name + "' is already loaded (on " + ids(reachable) + ")");
    }
    Outcome outcome = callAll(targets, w -> w.loadLoraAdapter(name, path, CALL_TIMEOUT), false);
    if (outcome.failure() != null) {
      Outcome undone = callAll(outcome.done(), w -> w.unloadLoraAdapter(name, CALL_TIMEOUT), true);
      awaitSeen(undone.done(), w -> !w.serves(name));
      String why = "LoRA adapter '" + name + "' was not loaded: " + outcome.failure()
          + (outcome.done().isEmpty() ? "" : "; unloaded again from " + ids(undone.done()))
          + (undone.failure() == null ? "" : "; not unloaded from " + undone.failure());
      throw outcome.unreachable() ? new NoWorkerAvailableException(why) : new IllegalArgumentException(why);
    }
    loaded.put(name, path);
    // A worker that joined while the calls ran was given what was loaded before this one.
    pool.reachable().stream().filter(w -> !reachable.contains(w) && !w.serves(name)).forEach(w -> give(w, name, path));
    awaitSeen(outcome.done(), w -> w.serves(name));
    log.info("LoRA adapter '{}' from {} loaded on {}", name, path, ids(outcome.done()));
    return ids(outcome.done());
  }

  /**
   * Unloads adapter {@code name} from every reachable worker that has it; requests already running
   * with it finish with it.
   *
   * @return the workers that unloaded it
   * @throws NoSuchElementException if no reachable worker has it
   * @throws IllegalArgumentException if a worker refused (one started without runtime updates)
   */
  public List<WorkerId> unload(String name) {
    synchronized (updates) {
      return unloadFromAll(name);
    }
  }

  private List<WorkerId> unloadFromAll(String name) {
    boolean ours = loaded.remove(name) != null;
    List<WorkerClient> targets = pool.reachable().stream().filter(w -> w.serves(name)).toList();
    if (targets.isEmpty()) {
      if (ours) {
        return List.of(); // loaded here, on workers that have all gone since
      }
      List<String> served = served();
      throw new NoSuchElementException("LoRA adapter '" + name + "' is not loaded"
          + (served.isEmpty() ? "" : " (loaded: " + String.join(", ", served) + ")"));
    }
    Outcome outcome = callAll(targets, w -> w.unloadLoraAdapter(name, CALL_TIMEOUT), true);
    awaitSeen(outcome.done(), w -> !w.serves(name));
    if (outcome.failure() != null) {
      String why = "LoRA adapter '" + name + "' is still loaded on some workers: " + outcome.failure()
          + (outcome.done().isEmpty() ? "" : "; unloaded from " + ids(outcome.done()));
      throw outcome.unreachable() ? new NoWorkerAvailableException(why) : new IllegalArgumentException(why);
    }
    log.info("LoRA adapter '{}' unloaded from {}", name, ids(outcome.done()));
    return ids(outcome.done());
  }

  /** A worker that joined: it gets every adapter loaded here that it lacks, in the background. */
  private void giveLoaded(WorkerClient worker) {
    Map.copyOf(loaded).forEach((name, path) -> {
      if (!worker.serves(name)) {
        give(worker, name, path);
      }
    });
  }

  /** Has a worker that joined load adapter {@code name} in the background, logging how it went. */
  private static void give(WorkerClient worker, String name, String path) {
    worker.loadLoraAdapter(name, path, CALL_TIMEOUT).whenComplete((adapters, error) -> {
      if (error != null) {
        log.warn("worker {} joined without LoRA adapter '{}' and did not load it from {}: {}", worker.workerId(), name, path, why(error));
      } else {
        log.info("worker {} joined and loaded LoRA adapter '{}' from {}", worker.workerId(), name, path);
      }
    });
  }

  /** The workers whose call succeeded, and the first failure in words (null: none). */
  private record Outcome(List<WorkerClient> done, String failure, boolean unreachable) {}

  /** Calls every worker at once and waits for them all; with {@code absentIsDone}, NOT_FOUND counts as done (gone already). */
  private static Outcome callAll(
      List<WorkerClient> workers, java.util.function.Function<WorkerClient, CompletableFuture<List<String>>> call, boolean absentIsDone) {
    Map<WorkerClient, CompletableFuture<List<String>>> calls = new LinkedHashMap<>();
    workers.forEach(w -> calls.put(w, call.apply(w)));
    List<WorkerClient> done = new ArrayList<>();
    String failure = null;
    boolean unreachable = false;
    for (var e : calls.entrySet()) {
      try {
        e.getValue().join();
        done.add(e.getKey());
      } catch (CompletionException error) {
        Status status = Status.fromThrowable(error.getCause());
        if (absentIsDone && status.getCode() == Status.Code.NOT_FOUND) {
          done.add(e.getKey());
        } else if (failure == null) {
          failure = "worker " + e.getKey().workerId() + ": " + why(error);
          unreachable = status.getCode() == Status.Code.UNAVAILABLE || status.getCode() == Status.Code.DEADLINE_EXCEEDED;
        }
      }
    }
    return new Outcome(done, failure, unreachable);
  }

  /** Waits until this router's load reports show {@code seen} on every one of {@code workers}, or {@link #SEEN_WITHIN}. */
  private static void awaitSeen(List<WorkerClient> workers, Predicate<WorkerClient> seen) {
    long deadline = System.nanoTime() + SEEN_WITHIN.toNanos();
    while (!workers.stream().filter(WorkerClient::reachable).allMatch(seen)) {
      if (System.nanoTime() > deadline) {
        log.warn("a LoRA adapter change has not shown in the load reports of {} within {} s", ids(workers), SEEN_WITHIN.toSeconds());
        return;
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static String why(Throwable error) {
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    Status status = Status.fromThrowable(cause);
    return status.getDescription() != null ? status.getDescription() : status.getCode() + (cause.getMessage() == null ? "" : " " + cause.getMessage());
  }

  private static List<WorkerId> ids(List<WorkerClient> workers) {
    return workers.stream().map(WorkerClient::workerId).toList();
  }
}
