package dev.tandem.worker;

import dev.tandem.common.InternalTls;
import dev.tandem.common.WorkerId;
import dev.tandem.transfer.TransferTls;
import dev.tandem.wire.GrpcTls;
import dev.tandem.engine.Engine;
import dev.tandem.engine.KvHandoff;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferBackends;
import dev.tandem.common.WorkerRole;
import dev.tandem.engine.ModelFiles;
import dev.tandem.worker.role.RoleParts;
import dev.tandem.worker.role.RoleProviders;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running worker: an engine on its loop thread, its KV event log, and the worker API on a gRPC
 * port. Closing it stops the server, then the loop, then the engine.
 */
public final class WorkerServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerServer.class);

  /**
   * How a worker is started; build one from {@link #local} with the {@code with…} methods. Port 0
   * picks a free port; {@code metricsPort} -1 serves no metrics port (0: a free one). {@code
   * publishKvEvents} off makes the worker accept event subscriptions but never send anything, as
   * a worker with events disabled would (for testing the router's detection of exactly that).
   * {@code loraUpdates} on lets callers load and unload LoRA adapters while it runs.
   */
  public record Config(
      String host,
      int port,
      WorkerId workerId,
      WorkerRole role,
      ModelFiles modelFiles,
      int eventRingCapacity,
      boolean publishKvEvents,
      KvTransfer kvTransfer,
      int metricsPort,
      InternalTls tls,
      boolean loraUpdates) {
    /** An aggregated worker on a free loopback port, serving the bundled Qwen3 tokenizer, no metrics port. */
    public static Config local(WorkerId workerId) {
      return new Config("127.0.0.1", 0, workerId, WorkerRole.AGGREGATED, ModelFiles.bundledQwen3(), 10_000, true, null, -1, null, false);
    }

    public Config withHost(String host) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publishKvEvents, kvTransfer, metricsPort, tls, loraUpdates);
    }

    public Config withPort(int port) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publishKvEvents, kvTransfer, metricsPort, tls, loraUpdates);
    }

    public Config withModelFiles(ModelFiles files) {
      return new Config(host, port, workerId, role, files, eventRingCapacity, publishKvEvents, kvTransfer, metricsPort, tls, loraUpdates);
    }

    public Config withEventRing(int capacity) {
      return new Config(host, port, workerId, role, modelFiles, capacity, publishKvEvents, kvTransfer, metricsPort, tls, loraUpdates);
    }

    public Config withKvEvents(boolean publish) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publish, kvTransfer, metricsPort, tls, loraUpdates);
    }

    /** This role, moving KV with {@code transfer} (null: no transfer agent, aggregated only). */
    public Config withRole(WorkerRole role, KvTransfer transfer) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publishKvEvents, transfer, metricsPort, tls, loraUpdates);
    }

    /**
     * Mutual TLS with the deployment's certificates on the worker API, the KV transfer agents and
     * the calls this worker makes (null: plaintext, the default).
     */
    public Config withTls(InternalTls tls) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publishKvEvents, kvTransfer, metricsPort, tls, loraUpdates);
    }

    /** Serves {@code /metrics} on this port of {@link #host} (-1: none, 0: a free one). */
    public Config withMetricsPort(int metricsPort) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publishKvEvents, kvTransfer, metricsPort, tls, loraUpdates);
    }

    /** Takes LoRA adapter loads and unloads at runtime ({@code --allow-runtime-lora-updating}; off: refused). */
    public Config withLoraUpdates(boolean allowed) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publishKvEvents, kvTransfer, metricsPort, tls, allowed);
    }
  }

  /**
   * KV transfer for disaggregated serving: the backend ({@code auto}, {@code tcp}, {@code ucx},
   * {@code local}), the host peers reach the agent at, and the bound on one request's prefill plus
   * transfer (and on how long a prefill worker holds blocks for a peer).
   */
  public record KvTransfer(String backend, String host, java.time.Duration timeout, int port) {
    public KvTransfer {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("--kv-transfer-port must be 0-65535, was " + port);
      }
    }

    /** Agents on any free port. */
    public KvTransfer(String backend, String host, java.time.Duration timeout) {
      this(backend, host, timeout, 0);
    }
  }

  private final Config config;
  private final EngineLoop loop;
  private final KvEventLog events;
  private final Server server;
  private final ScheduledExecutorService timer;

  private final WorkerKvTransfer transfer; // null: no transfer agent
  private final RoleParts parts;
  private final WorkerMetrics metrics;
  private MetricsEndpoint metricsEndpoint; // null: no metrics port; set by start()
  private final CallGate gate;
  private final WorkerFacts facts;
  private volatile Runnable drainRequested = () -> log.warn("POST /drain: this worker was started without a drain handler");

  private WorkerServer(Config config, Engine engine) {
    this.config = config;
    this.events = new KvEventLog(config.eventRingCapacity());
    this.loop = new EngineLoop(engine, events);
    this.timer =
        Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("worker-load-timer").daemon().factory());
    loop.start();
    RoleParts roleParts = RoleParts.NONE;
    try {
      this.transfer = transfer(config, loop);
      if (transfer != null) {
        roleParts = RoleProviders.forRole(config.role()).create(config.role(), loop, transfer, timer, config.tls());
        for (var e : transfer.endpoints()) {
          log.info("worker {}: KV transfer agent {} at {}{}", config.workerId(), e.backend(), e.agent().address(),
              e.agent() == transfer.agent() ? "" : " (beside the primary " + transfer.agent().backend() + "; peers choose per link)");
        }
      }
    } catch (RuntimeException e) {
      timer.shutdownNow();
      loop.close(); // closes the engine too
      throw e;
    }
    this.parts = roleParts;
    this.metrics = new WorkerMetrics(config.workerId(), loop, transfer);
    this.gate = new CallGate(config.workerId());
    this.facts = new WorkerFacts(config.workerId(), config.role(), loop, config.modelFiles(), transfer, parts.remote(), gate);
    WorkerService service =
        new WorkerService(config.workerId(), config.role(), loop, events, facts, timer, config.publishKvEvents(), parts, gate, config.loraUpdates());
    this.server =
        NettyServerBuilder.forAddress(new InetSocketAddress(config.host(), config.port()), GrpcTls.server(config.tls()))
            .addService(io.grpc.ServerInterceptors.intercept(service, gate))
            // Every handler only enqueues onto the engine loop or answers from memory: no blocking,
            // so it runs on the transport thread without a hop through an executor.
            .directExecutor()
            // Routers ping every 10 s to notice a worker that stopped answering; allow it.
            .permitKeepAliveTime(5, java.util.concurrent.TimeUnit.SECONDS)
            .permitKeepAliveWithoutCalls(true)
            .build();
  }

  /**
   * The worker's transfer agent over its engine's KV memory, after the engine has warmed up and
   * measured its prefill speed; null for a worker without KV transfer.
   *
   * @throws IllegalArgumentException if the role needs transfer that the config or engine lacks
   */
  private static WorkerKvTransfer transfer(Config config, EngineLoop loop) {
    Engine engine = loop.engine();
    boolean split = config.role().splits();
    if (config.kvTransfer() == null) {
      if (split) {
        throw new IllegalArgumentException(config.role() + " workers need a KV transfer backend");
      }
      return null;
    }
    if (!(engine instanceof KvHandoff handoff)) {
      if (split) {
        throw new IllegalArgumentException(
            "engine " + engine.info().engineName() + " cannot hand KV to another worker; "
                + config.role() + " workers need --engine builtin");
      }
      return null;
    }
    PrefillWarmUp.run(config.workerId(), loop);
    var primary = TransferBackends.select(config.kvTransfer().backend());
    int port = config.kvTransfer().port();
    TransferTls tls = config.tls() == null ? null : TransferTls.of(config.tls());
    TransferAgent agent = primary.createAgent(config.kvTransfer().host(), port, tls);
    List<TransferAgent> others = new ArrayList<>();
    try {
      for (var p : TransferBackends.alongside(config.kvTransfer().backend(), primary)) {
        // A fixed port: the primary's, and the ports after it for the agents beside it.
        others.add(p.createAgent(config.kvTransfer().host(), port == 0 ? 0 : port + 1 + others.size(), tls));
      }
      return WorkerKvTransfer.create(agent, others, handoff, config.kvTransfer().timeout(), move -> loop.call(e -> {
            move.run();
            return null;
          })
          .join());
    } catch (RuntimeException e) {
      others.forEach(TransferAgent::close); // nothing runs on the engine yet, and closing them does not touch its KV memory
      agent.close();
      throw e;
    }
  }

  /** Starts a worker serving {@code engine}; the worker owns the engine from now on. */
  private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

  public static WorkerServer start(Config config, Engine engine) {
    WorkerServer worker = new WorkerServer(config, engine);
    try {
      worker.server.start();
    } catch (IOException e) {
      worker.close();
      throw new UncheckedIOException(
          "cannot listen on " + config.host() + ":" + config.port() + ": " + e.getMessage(), e);
    }
    if (config.metricsPort() >= 0) {
      try {
        worker.metricsEndpoint =
            MetricsEndpoint.start(config.host(), config.metricsPort(), worker.metrics::scrape, worker::health,
                // With mutual TLS, nothing unauthenticated may stop the worker: SIGTERM drains it.
                config.tls() != null ? null : () -> worker.drainRequested.run());
      } catch (RuntimeException e) {
        worker.close();
        throw e;
      }
    }
    log.info(
        "worker {} ({}, engine {}, model {}) listening on {}:{}, {}",
        config.workerId(),
        config.role(),
        engine.info().engineName(),
        engine.info().modelName(),
        config.host(),
        worker.port(),
        config.tls() == null ? "plaintext" : "mutual TLS (certificate " + config.tls().certificate() + ")");
    if (worker.metricsEndpoint != null) {
      log.info("worker {}: metrics on http://{}:{}/metrics", config.workerId(), config.host(), worker.metricsPort());
    }
    return worker;
  }

  public int port() {
    return server.getPort();
  }

  /** The port serving {@code /metrics}, or -1 when there is none. */
  public int metricsPort() {
    return metricsEndpoint == null ? -1 : metricsEndpoint.port();
  }

  /** This worker's own meters (bind them to another registry to show them there too). */
  public WorkerMetrics metrics() {
    return metrics;
  }

  /** {@code host:port} to give frontends. */
  public String address() {
    return config.host() + ":" + port();
  }

  public WorkerId workerId() {
    return config.workerId();
  }

  /** The prefill role's endpoint, or null on a worker of another role. */
  public dev.tandem.worker.role.PrefillEndpoint prefillEndpoint() {
    return parts.prefill();
  }

  public EngineLoop loop() {
    return loop;
  }

  public KvEventLog events() {
    return events;
  }

  /** What this worker says of itself (Describe). */
  public dev.tandem.common.WorkerDescription description() {
    return facts.description();
  }

  /** {@code serving}, {@code draining} or {@code stopped}, as {@code /health} reports it. */
  public String health() {
    return !loop.isRunning() ? "stopped" : gate.draining() ? "draining" : "serving";
  }

  /** What {@code POST /drain} on the metrics port does (the launcher: drain, then exit). */
  public void onDrainRequest(Runnable handler) {
    this.drainRequested = handler;
  }

  /** True once {@link #drain} has begun. */
  public boolean draining() {
    return gate.draining();
  }

  /**
   * Drains: from now on refuses new Generate and Prefill calls (routers send them elsewhere) and
   * reports itself draining in its load and health, runs {@code leave} (leave discovery), then waits
   * up to {@code timeout} for the calls in flight to end. The worker keeps serving those, and every
   * other call, until {@link #close}.
   *
   * @return true if every call in flight ended within the timeout
   */
  public boolean drain(java.time.Duration timeout, Runnable leave) throws InterruptedException {
    gate.startDraining();
    log.info("worker {} draining: {} call(s) in flight; waiting up to {} s", config.workerId(), gate.inFlight(), timeout.toSeconds());
    try {
      leave.run();
    } catch (RuntimeException e) {
      log.warn("worker {} could not leave discovery: {}", config.workerId(), e.toString());
    }
    long start = System.nanoTime();
    boolean idle = gate.awaitIdle(timeout);
    if (idle) {
      log.info("worker {} drained in {} ms", config.workerId(), (System.nanoTime() - start) / 1_000_000);
    } else {
      log.warn("worker {}: drain timed out after {} s with {} call(s) still in flight; they will be cut", config.workerId(), timeout.toSeconds(), gate.inFlight());
    }
    return idle;
  }

  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  /**
   * Stops the worker: its gRPC server (calls in flight get up to a second to finish), metrics port,
   * engine loop and transfer agent. Idempotent.
   */
  @Override
  public void close() {
    stop(true);
  }

  /**
   * Stops the worker as a crash would: calls in flight are cut at once, mid-stream, rather than
   * given time to finish. Idempotent; what the fault tests use when a process cannot be killed.
   */
  public void kill() {
    stop(false);
  }

  private void stop(boolean letCallsFinish) {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (metricsEndpoint != null) {
      metricsEndpoint.close();
    }
    if (letCallsFinish) {
      server.shutdown();
    } else {
      server.shutdownNow();
    }
    try {
      if (!server.awaitTermination(1, TimeUnit.SECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      server.shutdownNow();
    }
    timer.shutdownNow();
    if (parts.remote() != null) {
      parts.remote().close();
    }
    loop.close();
    // After the engine: its KV cache lives in memory the agent allocated.
    if (transfer != null) {
      transfer.close();
    }
  }
}
