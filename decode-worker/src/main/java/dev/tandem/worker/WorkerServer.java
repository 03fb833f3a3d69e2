package dev.tandem.worker;

import dev.tandem.common.WorkerId;
import dev.tandem.engine.Engine;
import dev.tandem.engine.KvHandoff;
import dev.tandem.transfer.TransferAgent;
import dev.tandem.transfer.TransferBackends;
import dev.tandem.worker.disagg.PrefillCalls;
import dev.tandem.worker.disagg.RemotePrefills;
import dev.tandem.worker.disagg.WorkerKvTransfer;
import dev.tandem.engine.ModelFiles;
import dev.tandem.proto.worker.v1.WorkerRole;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
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
   * How a worker is started. Port 0 picks a free port. {@code publishKvEvents} off makes the
   * worker accept event subscriptions but never send anything, as a worker with events disabled
   * would (for testing the router's detection of exactly that).
   */
  public record Config(
      String host,
      int port,
      WorkerId workerId,
      WorkerRole role,
      ModelFiles modelFiles,
      int eventRingCapacity,
      boolean publishKvEvents,
      KvTransfer kvTransfer) {
    public static Config local(WorkerId workerId) {
      return new Config(
          "127.0.0.1", 0, workerId, WorkerRole.WORKER_ROLE_AGGREGATED, ModelFiles.bundledQwen3(), 10_000, true, null);
    }

    public Config withPort(int port) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publishKvEvents, kvTransfer);
    }

    public Config withEventRing(int capacity) {
      return new Config(host, port, workerId, role, modelFiles, capacity, publishKvEvents, kvTransfer);
    }

    public Config withKvEvents(boolean publish) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publish, kvTransfer);
    }

    /** This role, moving KV with {@code transfer} (null: no transfer agent, aggregated only). */
    public Config withRole(WorkerRole role, KvTransfer transfer) {
      return new Config(host, port, workerId, role, modelFiles, eventRingCapacity, publishKvEvents, transfer);
    }
  }

  /**
   * KV transfer for disaggregated serving: the backend ({@code auto}, {@code tcp}, {@code ucx},
   * {@code local}), the host peers reach the agent at, and the bound on one request's prefill plus
   * transfer (and on how long a prefill worker holds blocks for a peer).
   */
  public record KvTransfer(String backend, String host, java.time.Duration timeout) {}

  private final Config config;
  private final EngineLoop loop;
  private final KvEventLog events;
  private final Server server;
  private final ScheduledExecutorService timer;

  private final WorkerService.Disaggregation disagg;

  private WorkerServer(Config config, Engine engine) {
    this.config = config;
    this.events = new KvEventLog(config.eventRingCapacity());
    this.loop = new EngineLoop(engine, events);
    this.timer =
        Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("worker-load-timer").daemon().factory());
    loop.start();
    try {
      this.disagg = disaggregation(config, loop, timer);
    } catch (RuntimeException e) {
      timer.shutdownNow();
      loop.close(); // closes the engine too
      throw e;
    }
    WorkerService service =
        new WorkerService(config.workerId(), config.role(), loop, events, config.modelFiles(), timer, config.publishKvEvents(), disagg);
    this.server =
        NettyServerBuilder.forAddress(new InetSocketAddress(config.host(), config.port()))
            .addService(service)
            // Every handler only enqueues onto the engine loop or answers from memory: no blocking,
            // so it runs on the transport thread without a hop through an executor.
            .directExecutor()
            .build();
  }

  private static WorkerService.Disaggregation disaggregation(Config config, EngineLoop loop, ScheduledExecutorService timer) {
    Engine engine = loop.engine();
    boolean split = config.role() == WorkerRole.WORKER_ROLE_PREFILL || config.role() == WorkerRole.WORKER_ROLE_DECODE;
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
    if (engine instanceof dev.tandem.engine.builtin.BuiltinEngine builtin) {
      // Routers weigh remote against local prefill by the engines' measured prefill speed.
      long t0 = System.nanoTime();
      loop.call(e -> {
            builtin.warmUp(1024, 5); // 512 (uncounted), 256, 1024, 256, 1024 tokens
            return null;
          })
          .join();
      var cost = builtin.prefillCost();
      log.info("worker {}: warmed up in {} ms; prefill {} µs per token + {} ns per attended token ({} tokens/s at 512, {} at 4,096)",
          config.workerId(), (System.nanoTime() - t0) / 1_000_000, String.format("%.1f", cost.perToken() * 1e6),
          String.format("%.2f", cost.perContextToken() * 1e9), String.format("%.0f", cost.tokensPerSecond(512)),
          String.format("%.0f", cost.tokensPerSecond(4096)));
    }
    TransferAgent agent = TransferBackends.select(config.kvTransfer().backend()).createAgent(config.kvTransfer().host());
    WorkerKvTransfer transfer;
    try {
      transfer = WorkerKvTransfer.create(agent, handoff, config.kvTransfer().timeout(), move -> loop.call(e -> {
            move.run();
            return null;
          })
          .join());
    } catch (RuntimeException e) {
      agent.close(); // nothing runs on the engine yet, and closing it next does not touch its KV memory
      throw e;
    }
    PrefillCalls prefill =
        config.role() == WorkerRole.WORKER_ROLE_PREFILL
            ? new PrefillCalls(loop, transfer, timer, WorkerService::toEngineRequest)
            : null;
    RemotePrefills pull =
        config.role() == WorkerRole.WORKER_ROLE_PREFILL
            ? null
            : new RemotePrefills(loop, transfer, timer, engine.info().eosTokenIds());
    log.info("worker {}: KV transfer agent {} at {}", config.workerId(), agent.backend(), agent.address());
    return new WorkerService.Disaggregation(transfer, prefill, pull);
  }

  /** Starts a worker serving {@code engine}; the worker owns the engine from now on. */
  public static WorkerServer start(Config config, Engine engine) {
    WorkerServer worker = new WorkerServer(config, engine);
    try {
      worker.server.start();
    } catch (IOException e) {
      worker.close();
      throw new UncheckedIOException(
          "cannot listen on " + config.host() + ":" + config.port() + ": " + e.getMessage(), e);
    }
    log.info(
        "worker {} ({}, engine {}, model {}) listening on {}:{}",
        config.workerId(),
        config.role(),
        engine.info().engineName(),
        engine.info().modelName(),
        config.host(),
        worker.port());
    return worker;
  }

  public int port() {
    return server.getPort();
  }

  /** {@code host:port} to give frontends. */
  public String address() {
    return config.host() + ":" + port();
  }

  public WorkerId workerId() {
    return config.workerId();
  }

  public EngineLoop loop() {
    return loop;
  }

  public KvEventLog events() {
    return events;
  }

  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  @Override
  public void close() {
    server.shutdown();
    try {
      if (!server.awaitTermination(1, TimeUnit.SECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      server.shutdownNow();
    }
    timer.shutdownNow();
    if (disagg != null && disagg.pull() != null) {
      disagg.pull().close();
    }
    loop.close();
    // After the engine: its KV cache lives in memory the agent allocated.
    if (disagg != null && disagg.transfer() != null) {
      disagg.transfer().close();
    }
  }
}
