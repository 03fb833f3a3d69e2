package dev.tandem.cli;

import dev.tandem.common.InternalTls;
import dev.tandem.common.WorkerId;
import dev.tandem.engine.Engine;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.EventLoops;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.frontend.text.TextTokenizer;
import dev.tandem.common.ModelCard;
import dev.tandem.common.WorkerRole;
import dev.tandem.router.grpc.CallLanes;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.RouterMetrics;
import dev.tandem.router.grpc.WorkerClient;
import dev.tandem.router.grpc.WorkerPool;
import dev.tandem.worker.WorkerServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every role in one process, as {@code tandem serve} runs it: workers (builtin or mocker engine)
 * serving gRPC on loopback, a router over them, and the HTTP frontend. The pieces talk over the
 * same gRPC API as separate processes do. Aggregated mode starts {@code workers} aggregated
 * workers; disaggregated mode starts {@code prefillWorkers} prefill and {@code workers} decode
 * workers with KV transfer agents, each optionally pinned to its own share of the CPUs. Closing it
 * stops the frontend, then the router, then the workers.
 */
public final class LocalDeployment implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(LocalDeployment.class);
  public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(30);
  static final Duration LOAD_INTERVAL = Duration.ofMillis(500);

  private final List<WorkerServer> workers;
  private final WorkerPool pool;
  private final Router router;
  private final FrontendServer frontend;
  private final ServedModel model;
  private final EventLoops loops;

  private LocalDeployment(
      List<WorkerServer> workers, WorkerPool pool, Router router, FrontendServer frontend, ServedModel model, EventLoops loops) {
    this.workers = workers;
    this.pool = pool;
    this.router = router;
    this.frontend = frontend;
    this.model = model;
    this.loops = loops;
  }

  /** The frontend's event loops, lent to the pool's workers as lanes (see {@link CallLanes}). */
  static CallLanes lanes(EventLoops loops) {
    return new CallLanes(loops.group(), loops.socketChannelType(),
        Integer.getInteger("tandem.callLanes.maxChannels", CallLanes.DEFAULT_MAX_CHANNELS));
  }

  /**
   * What to start: {@code workers} aggregated (or, with {@code prefillWorkers} > 0, decode)
   * workers and {@code prefillWorkers} prefill workers, each with an engine from {@code engines}.
   * {@code kvTransfer} is required for prefill workers; {@code pinCpus} gives every worker a
   * disjoint share of this process's CPUs.
   */
  public record Spec(
      int workers,
      int prefillWorkers,
      Supplier<Engine> engines,
      ModelFiles modelFiles,
      int blockSize,
      Router.Config router,
      FrontendServer.Config frontend,
      WorkerServer.KvTransfer kvTransfer,
      boolean pinCpus,
      InternalTls tls) {

    /** Aggregated workers. */
    public Spec(
        int workers, Supplier<Engine> engines, ModelFiles modelFiles, int blockSize, Router.Config router, FrontendServer.Config frontend) {
      this(workers, 0, engines, modelFiles, blockSize, router, frontend, null, false, null);
    }

    /**
     * Disaggregated: {@code prefillWorkers} prefill workers besides the decode workers, moving KV
     * with {@code kvTransfer}; {@code pinCpus} gives every worker a disjoint share of the CPUs.
     */
    public Spec withDisaggregation(int prefillWorkers, WorkerServer.KvTransfer kvTransfer, boolean pinCpus) {
      return new Spec(workers, prefillWorkers, engines, modelFiles, blockSize, router, frontend, kvTransfer, pinCpus, tls);
    }

    /** Workers, their KV transfer and the router's calls under mutual TLS with {@code tls} (null: plaintext). */
    public Spec withTls(InternalTls tls) {
      return new Spec(workers, prefillWorkers, engines, modelFiles, blockSize, router, frontend, kvTransfer, pinCpus, tls);
    }

    /** Mocker workers. */
    public static Spec mocker(
        int workers, MockerConfig mocker, ModelFiles modelFiles, Router.Config router, FrontendServer.Config frontend) {
      return new Spec(workers, () -> new MockerEngine(mocker), modelFiles, mocker.blockSize(), router, frontend);
    }
  }

  public static LocalDeployment start(Spec spec) {
    if (spec.prefillWorkers() > 0 && spec.kvTransfer() == null) {
      throw new IllegalArgumentException("prefill workers need a KV transfer backend");
    }
    List<WorkerServer> workers = new ArrayList<>();
    WorkerPool pool = null;
    EventLoops loops = EventLoops.create();
    // The frontend's tokenizer is parsed while the workers start (a large vocabulary's takes 1-2 s).
    CompletableFuture<TextTokenizer> tokenizer = parseAhead(spec.modelFiles());
    try {
      int total = spec.workers() + spec.prefillWorkers();
      List<BitSet> shares = null;
      if (spec.pinCpus()) {
        shares = CpuAffinity.split(CpuAffinity.current(), total);
        // The JDK sizes its shared pools (virtual-thread carriers, the common pool) by the CPUs of
        // the thread that first uses them; a pinned worker thread must not be that thread, or the
        // whole process gets one carrier thread (link probes then stalled for a minute).
        Thread.ofVirtual().start(() -> {}).join();
        java.util.concurrent.ForkJoinPool.commonPool().submit(() -> {}).get();
      }
      for (int i = 0; i < total; i++) {
        boolean prefill = i < spec.prefillWorkers();
        WorkerRole role =
            prefill ? WorkerRole.PREFILL : spec.prefillWorkers() > 0 ? WorkerRole.DECODE : WorkerRole.AGGREGATED;
        String id = prefill ? "prefill-" + i : spec.prefillWorkers() > 0 ? "decode-" + (i - spec.prefillWorkers()) : "worker-" + i;
        var config =
            WorkerServer.Config.local(new WorkerId(id)).withRole(role, spec.kvTransfer()).withModelFiles(spec.modelFiles()).withTls(spec.tls())
                .withLoraUpdates(spec.frontend().admission().loraUpdates());
        BitSet cpus = shares == null ? null : shares.get(i);
        workers.add(startWorker(config, spec.engines(), cpus));
      }
      pool = new WorkerPool(spec.blockSize(), CONNECT_TIMEOUT, LOAD_INTERVAL, spec.tls(), lanes(loops));
      for (WorkerServer w : workers) {
        pool.add(w.address());
      }
      Router router = Router.create(pool, spec.router());
      if (spec.prefillWorkers() > 0) {
        router.disaggregation().awaitLinkProbes(Duration.ofSeconds(120));
      }
      ServedModel model = servedModel(pool, CONNECT_TIMEOUT, spec.frontend().chatTemplate(), spec.modelFiles(), tokenizer);
      FrontendMetrics metrics = metrics(router);
      // One process, one /metrics: the workers' own meters are shown by the frontend's too.
      workers.forEach(w -> w.metrics().bindTo(metrics.registry()));
      FrontendServer frontend = FrontendServer.start(spec.frontend(), model, router, metrics, loops);
      return new LocalDeployment(workers, pool, router, frontend, model, loops);
    } catch (Exception e) {
      tokenizer.thenAccept(TextTokenizer::close);
      if (pool != null) {
        pool.close();
      }
      workers.forEach(WorkerServer::close);
      loops.close();
      throw e instanceof RuntimeException r ? r : new IllegalStateException(e);
    }
  }

  /** {@code files}' tokenizer, parsed on a thread of its own; completes exceptionally if it does not parse. */
  private static CompletableFuture<TextTokenizer> parseAhead(ModelFiles files) {
    CompletableFuture<TextTokenizer> parsed = new CompletableFuture<>();
    Thread.ofPlatform().name("tokenizer-ahead").daemon().start(() -> {
      try {
        parsed.complete(TextTokenizer.fromJson(files.tokenizerJson(), files.source()));
      } catch (Throwable t) {
        parsed.completeExceptionally(t);
      }
    });
    return parsed;
  }

  /**
   * As {@link #servedModel(WorkerPool, Duration, String)}, with the tokenizer parsed ahead from
   * {@code files} where the worker's card carries the same {@code tokenizer.json} (else, or if it
   * did not parse, the card's own is parsed as always, and its error names the card).
   */
  static ServedModel servedModel(WorkerPool pool, Duration timeout, String chatTemplate, ModelFiles files,
      CompletableFuture<TextTokenizer> ahead) {
    WorkerClient first = firstGenerating(pool);
    ModelCard card = first.modelCard(timeout);
    TextTokenizer parsed = java.util.Arrays.equals(card.tokenizerJson(), files.tokenizerJson()) ? ahead.exceptionally(t -> null).join() : null;
    if (parsed == null) {
      ahead.thenAccept(TextTokenizer::close);
      return withTemplateWarning(ServedModel.of(first.description(), card, chatTemplate));
    }
    return withTemplateWarning(ServedModel.of(first.description(), card, chatTemplate, parsed));
  }

  /**
   * The model the pool's first generating worker describes (any worker if none generates), with
   * the tokenizer from its model card. Not a prefill worker's: the card is megabytes, and a prefill
   * worker's link is for KV (a decode worker may be measuring it right now). {@code chatTemplate}:
   * {@code --chat-template}'s text, or null for the model's own.
   */
  static ServedModel servedModel(WorkerPool pool, Duration timeout, String chatTemplate) {
    WorkerClient first = firstGenerating(pool);
    return withTemplateWarning(ServedModel.of(first.description(), first.modelCard(timeout), chatTemplate));
  }

  private static WorkerClient firstGenerating(WorkerPool pool) {
    return pool.all().stream().filter(w -> !w.isPrefillOnly()).findFirst().orElse(pool.all().getFirst());
  }

  private static ServedModel withTemplateWarning(ServedModel model) {
    if (!model.hasChatTemplate()) {
      log.warn("model {} has no chat template (none in its tokenizer_config.json, no chat_template.jinja): it serves /v1/completions,"
          + " and chat requests get a 400 until the frontend starts with --chat-template FILE", model.name());
    }
    return model;
  }

  /** The frontend's metrics, with the router's meters bound to the same registry. */
  static FrontendMetrics metrics(Router router) {
    FrontendMetrics metrics = new FrontendMetrics();
    RouterMetrics.bind(router, metrics.registry());
    return metrics;
  }

  /**
   * Starts one worker; with {@code cpus}, from a thread pinned to them, so that the engine's
   * threads (created there) inherit the pinning.
   */
  private static WorkerServer startWorker(WorkerServer.Config config, Supplier<Engine> engines, BitSet cpus) {
    if (cpus == null) {
      return WorkerServer.start(config, engines.get());
    }
    CompletableFuture<WorkerServer> started = new CompletableFuture<>();
    Thread.ofPlatform()
        .name("start-" + config.workerId().value())
        .start(() -> {
          try {
            CpuAffinity.pin(cpus);
            log.info("worker {} pinned to CPUs {}", config.workerId(), CpuAffinity.format(cpus));
            started.complete(WorkerServer.start(config, engines.get()));
          } catch (Throwable t) {
            started.completeExceptionally(t);
          }
        });
    try {
      return started.join();
    } catch (java.util.concurrent.CompletionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : e;
    }
  }

  public int port() {
    return frontend.port();
  }

  public List<WorkerServer> workers() {
    return workers;
  }

  public ServedModel model() {
    return model;
  }

  public FrontendServer frontend() {
    return frontend;
  }

  public Router router() {
    return router;
  }

  @Override
  public void close() {
    frontend.close();
    router.close();
    pool.close();
    workers.forEach(WorkerServer::close);
    loops.close();
    model.tokenizer().close();
  }
}
