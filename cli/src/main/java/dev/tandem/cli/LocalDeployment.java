package dev.tandem.cli;

import dev.tandem.common.WorkerId;
import dev.tandem.engine.Engine;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.MockerEngine;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.proto.worker.v1.WorkerRole;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerPool;
import dev.tandem.worker.WorkerServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Every role in one process, as {@code tandem serve} runs it: workers (builtin or mocker engine)
 * serving gRPC on loopback, a router over them, and the HTTP frontend. The pieces talk over the same gRPC API as
 * separate processes do. Closing it stops the frontend, then the router, then the workers.
 */
public final class LocalDeployment implements AutoCloseable {
  public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(30);
  static final Duration LOAD_INTERVAL = Duration.ofMillis(500);

  private final List<WorkerServer> workers;
  private final WorkerPool pool;
  private final Router router;
  private final FrontendServer frontend;
  private final ServedModel model;

  private LocalDeployment(
      List<WorkerServer> workers, WorkerPool pool, Router router, FrontendServer frontend, ServedModel model) {
    this.workers = workers;
    this.pool = pool;
    this.router = router;
    this.frontend = frontend;
    this.model = model;
  }

  /** What to start: {@code workers} workers, each with an engine from {@code engines}. */
  public record Spec(
      int workers,
      Supplier<Engine> engines,
      ModelFiles modelFiles,
      int blockSize,
      Router.Config router,
      FrontendServer.Config frontend) {

    /** Mocker workers. */
    public static Spec mocker(
        int workers, MockerConfig mocker, ModelFiles modelFiles, Router.Config router, FrontendServer.Config frontend) {
      return new Spec(workers, () -> new MockerEngine(mocker), modelFiles, mocker.blockSize(), router, frontend);
    }
  }

  public static LocalDeployment start(Spec spec) {
    List<WorkerServer> workers = new ArrayList<>();
    WorkerPool pool = null;
    try {
      for (int i = 0; i < spec.workers(); i++) {
        var config =
            new WorkerServer.Config(
                "127.0.0.1", 0, new WorkerId("worker-" + i), WorkerRole.WORKER_ROLE_AGGREGATED, spec.modelFiles(), 10_000, true);
        workers.add(WorkerServer.start(config, spec.engines().get()));
      }
      pool = new WorkerPool(spec.blockSize(), CONNECT_TIMEOUT, LOAD_INTERVAL);
      for (WorkerServer w : workers) {
        pool.add(w.address());
      }
      ServedModel model = ServedModel.fromWorker(pool.all().getFirst(), CONNECT_TIMEOUT);
      Router router = Router.create(pool, spec.router());
      FrontendServer frontend = FrontendServer.start(spec.frontend(), model, router, new FrontendMetrics());
      return new LocalDeployment(workers, pool, router, frontend, model);
    } catch (RuntimeException e) {
      if (pool != null) {
        pool.close();
      }
      workers.forEach(WorkerServer::close);
      throw e;
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
    model.tokenizer().close();
  }
}
