package dev.tandem.router.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.WorkerId;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.FinishReason;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.LinkFigures;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.ProbeLinkRequest;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import dev.tandem.proto.worker.v1.WorkerRole;
import dev.tandem.router.Generation;
import dev.tandem.router.NoWorkerAvailableException;
import dev.tandem.router.Route;
import dev.tandem.router.TokenListener;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The router's wiring over in-process gRPC: a fake worker answers Describe, WatchLoad and
 * Generate as each test scripts it. Checks that every way a request ends gives its reservation
 * back exactly once, that failures reach the listener as the right kind, and that a cancel reaches
 * the worker.
 */
class RouterTest {
  private final List<Server> servers = new ArrayList<>();
  private WorkerPool pool;
  private Router router;

  /** How the fake worker answers Generate. */
  enum Behaviour { FINISH, FAIL_UNAVAILABLE, FAIL_INVALID, HANG, FINISH_ON_RELEASE }

  /** What a worker reports in its load stream, when a test sets it (otherwise only its id and KV size). */
  private final java.util.Map<String, LoadReport> reports = new java.util.concurrent.ConcurrentHashMap<>();

  /** Workers whose load stream says nothing while they are in here (a frozen process keeps its sockets open). */
  private final java.util.Set<String> frozen = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** The transfer backends the workers started next run, the primary first. */
  private List<String> backends = List.of("tcp");
  /** What a decode worker's link probe answers per backend (otherwise 1 GB/s, 100 µs). */
  private final java.util.Map<String, LinkFigures> linkFigures = new java.util.concurrent.ConcurrentHashMap<>();
  private final List<String> probedOver = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** The LoRA adapters a worker describes itself as serving and lists in its load reports (none unless a test sets them). */
  private final java.util.Map<String, List<String>> adapters = new java.util.concurrent.ConcurrentHashMap<>();

  /** FINISH_ON_RELEASE workers finish their streams when this completes. */
  private final CompletableFuture<Void> release = new CompletableFuture<>();

  /** What the fake worker saw. */
  static final class Seen {
    final CompletableFuture<GenerateRequest> request = new CompletableFuture<>();
    final CompletableFuture<Void> cancelled = new CompletableFuture<>();
  }

  private Seen worker(String id, WorkerRole role, Behaviour behaviour) throws Exception {
    return worker(id, role, behaviour, "");
  }

  private Seen worker(String id, WorkerRole role, Behaviour behaviour, String kvTransferAddress) throws Exception {
    return worker(id, role, behaviour, kvTransferAddress, false);
  }

  private Seen worker(String id, WorkerRole role, Behaviour behaviour, String kvTransferAddress, boolean draining) throws Exception {
    Seen seen = new Seen();
    Server server =
        InProcessServerBuilder.forName(id)
            .directExecutor()
            .addService(new WorkerGrpc.WorkerImplBase() {
              @Override
              public void describe(DescribeRequest r, StreamObserver<WorkerRegistration> out) {
                var registration = WorkerRegistration.newBuilder().setWorkerId(id).setRole(role).setBlockSize(16).setModelName("m")
                    .setKvTransferBackend(kvTransferAddress.isEmpty() ? "" : backends.getFirst()).setKvTransferAddress(kvTransferAddress)
                    .setKvBytesPerToken(1024).setNumLayers(2).setHost("host-" + id).setCpus("0")
                    .addAllLoraAdapters(adapters.getOrDefault(id, List.of()));
                if (!kvTransferAddress.isEmpty()) {
                  for (String b : backends) {
                    registration.addKvTransferEndpoints(
                        dev.tandem.proto.worker.v1.KvTransferEndpoint.newBuilder().setBackend(b).setAddress(kvTransferAddress + "/" + b));
                  }
                }
                out.onNext(registration.build());
                out.onCompleted();
              }

              @Override
              public void watchLoad(WatchLoadRequest r, StreamObserver<LoadReport> out) {
                // As a worker does, each report lists the adapters it has now.
                java.util.function.Supplier<LoadReport> fallback = () -> LoadReport.newBuilder().setWorkerId(id).setKvBlocksTotal(100)
                    .setDraining(draining).addAllLoraAdapters(adapters.getOrDefault(id, List.of())).build();
                FakeLoadStream.serve(r, out, () -> reports.containsKey(id) ? reports.get(id) : fallback.get(), () -> frozen.contains(id));
              }

              @Override
              public void probeLink(ProbeLinkRequest r, StreamObserver<LinkFigures> out) {
                probedOver.add(r.getBackend());
                out.onNext(linkFigures.getOrDefault(r.getBackend(),
                    LinkFigures.newBuilder().setBackend(r.getBackend()).setLatencyUs(100).setBytesPerS(1e9).build()));
                out.onCompleted();
              }

              @Override
              public void generate(GenerateRequest r, StreamObserver<GenerateChunk> out) {
                seen.request.complete(r);
                ((ServerCallStreamObserver<GenerateChunk>) out).setOnCancelHandler(() -> seen.cancelled.complete(null));
                switch (behaviour) {
                  case FINISH -> {
                    out.onNext(GenerateChunk.newBuilder().addTokenIds(7).setWorkerId(id).setPromptTokens(r.getTokenIdsCount()).build());
                    out.onNext(GenerateChunk.newBuilder().addTokenIds(8).setFinishReason(FinishReason.FINISH_REASON_LENGTH).build());
                    out.onCompleted();
                  }
                  case FAIL_UNAVAILABLE -> out.onError(Status.UNAVAILABLE.withDescription("engine stopped").asRuntimeException());
                  case FAIL_INVALID -> out.onError(Status.INVALID_ARGUMENT.withDescription("prompt too long").asRuntimeException());
                  case HANG -> out.onNext(GenerateChunk.newBuilder().setWorkerId(id).build());
                  case FINISH_ON_RELEASE -> {
                    out.onNext(GenerateChunk.newBuilder().addTokenIds(7).setWorkerId(id).setPromptTokens(r.getTokenIdsCount()).build());
                    release.thenRun(() -> {
                      out.onNext(GenerateChunk.newBuilder().addTokenIds(8).setFinishReason(FinishReason.FINISH_REASON_LENGTH).build());
                      out.onCompleted();
                    });
                  }
                }
              }
            })
            .build()
            .start();
    servers.add(server);
    return seen;
  }

  private Router router(String... workers) {
    pool = pool(workers);
    router = new Router(pool, new dev.tandem.router.RoundRobinSelector());
    return router;
  }

  private static WorkerPool pool(String... workers) {
    WorkerPool p = new WorkerPool(16, Duration.ofSeconds(5), Duration.ofMillis(100),
        name -> InProcessChannelBuilder.forName(name).directExecutor().build());
    for (String w : workers) {
      p.add(w);
    }
    return p;
  }

  @AfterEach
  void stop() {
    if (router != null) {
      router.close();
    }
    if (pool != null) {
      pool.close();
    }
    servers.forEach(Server::shutdownNow);
  }

  private static GenerationRequest request(String id, int tokens) {
    int[] prompt = new int[tokens];
    java.util.Arrays.fill(prompt, 3);
    return new GenerationRequest(id, prompt, SamplingParams.greedy(), StopConditions.maxTokens(2));
  }

  /** Collects a generation's chunks and its end. */
  static final class Collector implements TokenListener {
    final List<TokenChunk> chunks = new ArrayList<>();
    final CompletableFuture<GenerationException> end = new CompletableFuture<>();
    volatile int openWhenFinished = -1;
    private final WorkerPool pool;

    Collector(WorkerPool pool) {
      this.pool = pool;
    }

    @Override
    public synchronized void onChunk(TokenChunk chunk) {
      chunks.add(chunk);
      if (chunk.finished()) {
        openWhenFinished = pool.ledger().open();
      }
    }

    @Override
    public void onError(GenerationException error) {
      end.complete(error);
    }

    @Override
    public void onCompleted() {
      end.complete(null);
    }
  }

  /**
   * A request naming a LoRA adapter goes only to workers that list it, carrying its name; one
   * naming an adapter no worker serves is refused, naming it, while base-model requests go anywhere.
   * An adapter a worker loads while serving counts from its next load report, and one it unloads
   * stops counting.
   */
  @Test
  void aRequestForAnAdapterGoesOnlyToWorkersServingIt() throws Exception {
    adapters.put("w1", List.of("sql", "chat"));
    Seen plain = worker("w0", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Seen withAdapters = worker("w1", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router("w0", "w1");
    java.util.Set<WorkerId> base = new java.util.HashSet<>();
    for (int i = 0; i < 4; i++) {
      assertEquals(new WorkerId("w1"), r.route(request("s" + i, 40).withLora("sql"), null).worker(), "round-robin, among those serving sql");
    }
    for (int i = 0; i < 4; i++) {
      base.add(r.route(request("b" + i, 40), null).worker());
    }
    assertEquals(java.util.Set.of(new WorkerId("w0"), new WorkerId("w1")), base, "the base model anywhere");
    Collector c = new Collector(pool);
    r.route(request("go", 40).withLora("chat"), null).start(c);
    assertEquals(null, c.end.get(5, TimeUnit.SECONDS));
    assertEquals("chat", withAdapters.request.get(5, TimeUnit.SECONDS).getLoraName(), "the worker is told the adapter");
    assertTrue(!plain.request.isDone(), "the worker without it never saw it");
    var refused = assertThrows(NoWorkerAvailableException.class, () -> r.route(request("x", 40).withLora("legal"), null));
    assertTrue(refused.getMessage().contains("LoRA adapter 'legal'"), refused.getMessage());

    adapters.put("w0", List.of("legal"));
    adapters.put("w1", List.of("chat"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!(pool.all().get(0).serves("legal") && !pool.all().get(1).serves("sql")) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(new WorkerId("w0"), r.route(request("l", 40).withLora("legal"), null).worker(), "loaded on w0 since");
    assertEquals(List.of("chat", "legal"), r.loraAdapters().stream().sorted().toList());
    assertThrows(NoWorkerAvailableException.class, () -> r.route(request("y", 40).withLora("sql"), null), "unloaded from w1 since");
  }

  @Test
  void aFinishedGenerationGivesItsReservationBackBeforeTheListenerHearsTheLastChunk() throws Exception {
    worker("w0", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router("w0");
    Route route = r.route(request("a", 40), null);
    assertEquals(new WorkerId("w0"), route.worker());
    assertEquals(1, pool.ledger().open());
    assertEquals(3, pool.ledger().routed(new WorkerId("w0")).decodeBlocks(), "40 tokens hold 3 blocks");
    assertEquals(3, pool.ledger().routed(new WorkerId("w0")).prefillBlocks(), "nothing cached: all 3 to prefill");
    Collector c = new Collector(pool);
    route.start(c);
    assertEquals(null, c.end.get(5, TimeUnit.SECONDS));
    assertEquals(2, c.chunks.size());
    assertEquals("w0", c.chunks.getFirst().origin().workerId());
    assertEquals(0, c.openWhenFinished, "released before the last chunk reached the listener");
    assertEquals(0, pool.ledger().open());
  }

  /**
   * A load report that arrived before work the router sent there ended still counts that work:
   * routing reads its requests and queued prompt tokens as none (the ledger holds what is in
   * flight) until a later report, which counts again — another frontend's work, say.
   */
  @Test
  void aReportOlderThanTheEndOfTheRoutersOwnWorkCountsNothingQueued() throws Exception {
    worker("w0", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    reports.put("w0", LoadReport.newBuilder().setWorkerId("w0").setKvBlocksTotal(100).setActiveRequests(1).setWaitingRequests(1)
        .setQueuedPrefillTokens(500).build());
    Router r = router("w0");
    WorkerClient w = pool.all().getFirst();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (w.lastLoadReport().queuedPrefillTokens() != 500 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(500, pool.report(w).queuedPrefillTokens(), "no work of this router has ended there yet");
    frozen.add("w0"); // no report for a moment
    Thread.sleep(150);
    Collector c = new Collector(pool);
    r.route(request("a", 40), null).start(c);
    assertEquals(null, c.end.get(5, TimeUnit.SECONDS));
    assertEquals(500, w.lastLoadReport().queuedPrefillTokens(), "the report itself is kept");
    var stale = pool.report(w);
    assertEquals(0, stale.queuedPrefillTokens());
    assertEquals(0, stale.activeRequests() + stale.waitingRequests());
    assertEquals(0, pool.load(w).speed().reportedQueuedPrefillTokens(), "what selectors read");
    frozen.remove("w0");
    deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (pool.report(w).queuedPrefillTokens() != 500 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(500, pool.report(w).queuedPrefillTokens(), "a report after the end counts again");
  }

  @Test
  void aWorkerThatRefusesBeforeAnyOutputIsPassedOverForAnother() throws Exception {
    worker("draining", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FAIL_UNAVAILABLE);
    worker("ok", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router("draining", "ok");
    for (int i = 0; i < 6; i++) {
      Collector c = new Collector(pool);
      r.route(request("r" + i, 8), null).start(c);
      assertEquals(null, c.end.get(5, TimeUnit.SECONDS), "request " + i);
      assertEquals("ok", c.chunks.getFirst().origin().workerId());
      assertEquals(2, c.chunks.size(), "the refused attempt adds nothing the listener sees");
    }
    assertEquals(6, r.reroutes(), "each request met the refusing worker first (the reroute took round-robin's other turn)");
    assertEquals(0, pool.ledger().open(), "both attempts' reservations released");
  }

  @Test
  void whenNoOtherWorkerCanTakeItTheRefusalReachesTheListener() throws Exception {
    worker("down", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FAIL_UNAVAILABLE);
    Router r = router("down");
    Collector c = new Collector(pool);
    r.route(request("x", 8), null).start(c);
    GenerationException e = c.end.get(5, TimeUnit.SECONDS);
    assertEquals(GenerationException.Kind.UNAVAILABLE, e.kind());
    assertEquals("engine stopped", e.getMessage());
    assertEquals(0, pool.ledger().open());
  }

  @Test
  void aDrainingWorkerIsNotChosen() throws Exception {
    worker("leaving", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH, "", true);
    worker("staying", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router("leaving", "staying");
    awaitLoad(pool, "leaving");
    for (int i = 0; i < 4; i++) {
      Route route = r.route(request("d" + i, 8), null);
      assertEquals(new WorkerId("staying"), route.worker());
      route.release();
    }
    WorkerClient staying = pool.all().stream().filter(w -> w.workerId().value().equals("staying")).findFirst().orElseThrow();
    pool.remove(staying);
    var e = assertThrows(NoWorkerAvailableException.class, () -> r.route(request("none", 8), null));
    assertEquals("every decode or aggregated worker is draining", e.getMessage());
  }

  @Test
  void aWorkerThatLeavesTakesNoNewRequestsButFinishesTheOnesItHas() throws Exception {
    worker("old", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH_ON_RELEASE);
    worker("new", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router("old", "new");
    Collector inFlight = new Collector(pool);
    r.route(request("long", 8), "old").start(inFlight);
    WorkerClient old = pool.all().stream().filter(w -> w.workerId().value().equals("old")).findFirst().orElseThrow();
    pool.remove(old);
    assertEquals(List.of("new"), pool.all().stream().map(w -> w.workerId().value()).toList());
    for (int i = 0; i < 3; i++) {
      Route route = r.route(request("after" + i, 8), null);
      assertEquals(new WorkerId("new"), route.worker());
      route.release();
    }
    release.complete(null);
    assertEquals(null, inFlight.end.get(5, TimeUnit.SECONDS), "the stream open on the leaving worker finished");
    assertEquals(2, inFlight.chunks.size());
    assertEquals(0, pool.ledger().open());
  }

  @Test
  void thePoolFollowsDiscoveryAsWorkersComeAndGo() throws Exception {
    worker("a", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    worker("b", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router();
    var discovery = new dev.tandem.discovery.StaticDiscovery(List.of());
    try (DiscoveredWorkers followed = DiscoveredWorkers.follow(discovery, pool)) {
      var a = discovery.register(record("a", 16));
      awaitIds(pool, List.of("a"));
      var b = discovery.register(record("b", 16));
      awaitIds(pool, List.of("a", "b"));
      a.close();
      awaitIds(pool, List.of("b"));
      for (int i = 0; i < 3; i++) {
        Route route = r.route(request("f" + i, 8), null);
        assertEquals(new WorkerId("b"), route.worker());
        route.release();
      }
      discovery.register(record("a", 16));
      awaitIds(pool, List.of("a", "b"));
      assertEquals(java.util.Map.of(), pool.refused());
      b.close();
      awaitIds(pool, List.of("a"));
    }
  }

  @Test
  void aWorkerRegisteringAnotherBlockSizeIsRefusedAndListed() throws Exception {
    worker("odd", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router();
    var discovery = new dev.tandem.discovery.StaticDiscovery(List.of());
    try (DiscoveredWorkers followed = DiscoveredWorkers.follow(discovery, pool)) {
      var odd = discovery.register(record("odd", 32));
      await("a refusal recorded", () -> !r.refusedWorkers().isEmpty());
      assertEquals("worker odd at odd registered KV block size 32 but this router uses 16; refusing it (prefix hashes would never match)",
          r.refusedWorkers().get("odd"));
      assertTrue(pool.all().isEmpty());
      odd.close();
      await("the refusal gone with the worker", () -> r.refusedWorkers().isEmpty());
    }
  }

  private static dev.tandem.discovery.WorkerRecord record(String id, int blockSize) {
    return new dev.tandem.discovery.WorkerRecord(id, dev.tandem.common.WorkerRole.AGGREGATED, id, null, "m", blockSize, 100, "host-" + id);
  }

  private static void awaitIds(WorkerPool pool, List<String> ids) throws InterruptedException {
    await("pool holds " + ids, () -> pool.all().stream().map(w -> w.workerId().value()).sorted().toList().equals(ids));
  }

  private static void awaitLoad(WorkerPool pool, String id) throws InterruptedException {
    await("a draining load report from " + id, () -> pool.all().stream().anyMatch(w -> w.workerId().value().equals(id) && w.draining()));
  }

  /** Polls {@code condition} for up to 5 s. */
  private static void await(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "not within 5 s: " + what);
      Thread.sleep(10);
    }
  }

  @Test
  void aFailedGenerationReachesTheListenerAsItsKindAndReleases() throws Exception {
    worker("bad", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FAIL_INVALID);
    worker("down", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FAIL_UNAVAILABLE);
    Router r = router("bad", "down");
    Collector invalid = new Collector(pool);
    r.route(request("i", 8), "bad").start(invalid);
    GenerationException e = invalid.end.get(5, TimeUnit.SECONDS);
    assertEquals(GenerationException.Kind.INVALID_REQUEST, e.kind());
    assertEquals("prompt too long", e.getMessage());
    Collector unavailable = new Collector(pool);
    r.route(request("u", 8), "down").start(unavailable);
    assertEquals(GenerationException.Kind.UNAVAILABLE, unavailable.end.get(5, TimeUnit.SECONDS).kind());
    assertEquals(0, pool.ledger().open());
  }

  @Test
  void aCancelReachesTheWorkerAndReleasesOnce() throws Exception {
    Seen seen = worker("slow", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.HANG);
    Router r = router("slow");
    Collector c = new Collector(pool);
    Generation g = r.route(request("c", 20), null).start(c);
    seen.request.get(5, TimeUnit.SECONDS);
    assertEquals(1, pool.ledger().open());
    g.cancel("client went away");
    g.cancel("again");
    seen.cancelled.get(5, TimeUnit.SECONDS);
    assertEquals(0, pool.ledger().open());
    assertEquals(LoadLedgerView.none(), pool.ledger().routed(new WorkerId("slow")));
  }

  @Test
  void aRouteNeverStartedIsReleasedAndSendsNothing() throws Exception {
    Seen seen = worker("w", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router("w");
    Route route = r.route(request("n", 20), null);
    route.release();
    route.release();
    assertEquals(0, pool.ledger().open());
    assertTrue(!seen.request.isDone(), "nothing was sent");
  }

  @Test
  void requestsNeedAGeneratingWorkerAndAPinMustNameAReachableOne() throws Exception {
    worker("p", WorkerRole.WORKER_ROLE_PREFILL, Behaviour.FINISH);
    Router onlyPrefill = router("p");
    var none = assertThrows(NoWorkerAvailableException.class, () -> onlyPrefill.route(request("x", 4), null));
    assertTrue(none.getMessage().contains("only prefill workers"), none.getMessage());
    stop();
    servers.clear();
    worker("g", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.FINISH);
    Router r = router("g");
    var pin = assertThrows(IllegalArgumentException.class, () -> r.route(request("y", 4), "elsewhere"));
    assertTrue(pin.getMessage().contains("elsewhere"));
    assertEquals(0, pool.ledger().open(), "a refused request reserves nothing");
  }

  @Test
  void aSplitRequestNamesThePrefillWorkerAndChargesEachSideItsShare() throws Exception {
    Seen decode = worker("d", WorkerRole.WORKER_ROLE_DECODE, Behaviour.FINISH, "d:1");
    worker("p", WorkerRole.WORKER_ROLE_PREFILL, Behaviour.FINISH, "p:1");
    pool = pool("d", "p");
    var config = Router.Config.of("round-robin").withSplit(new dev.tandem.router.SplitPolicy(dev.tandem.router.SplitPolicy.Mode.ALWAYS, 1));
    router = Router.create(pool, config);
    Route route = router.route(request("s", 40), null);
    assertEquals(new WorkerId("d"), route.worker(), "the decode worker generates");
    assertTrue(route.decision().split(), route.decision().toString());
    assertEquals(new dev.tandem.router.LoadLedger.Routed(1, 0, 3), pool.ledger().routed(new WorkerId("d")), "decode holds the 3 blocks");
    assertEquals(new dev.tandem.router.LoadLedger.Routed(1, 3, 0), pool.ledger().routed(new WorkerId("p")), "prefill computes them");
    Collector c = new Collector(pool);
    route.start(c);
    assertEquals(null, c.end.get(5, TimeUnit.SECONDS));
    GenerateRequest sent = decode.request.get(5, TimeUnit.SECONDS);
    assertEquals("p", sent.getRemotePrefill().getWorkerId(), "the decode worker is told who prefills");
    assertEquals("p", sent.getRemotePrefill().getWorkerAddress());
    assertEquals(0, pool.ledger().open());
    assertEquals(LoadLedgerView.none(), pool.ledger().routed(new WorkerId("p")));
    assertEquals(1, router.disaggregation().splits());
  }

  /**
   * With the seconds cost, the split decision weighs the very predictions the worker choices
   * minimised: the decode worker's predicted time to first token is the local side, the prefill
   * worker's (plus the transfer's exposed share) the remote side.
   */
  @Test
  void theSplitDecisionWeighsTheSelectorsPredictedSeconds() throws Exception {
    // 1 ms per prompt token on both; the decode worker runs 2 streams in 20 ms steps, the prefill
    // worker has 2,000 prompt tokens queued (2 s).
    reports.put("d", LoadReport.newBuilder().setWorkerId("d").setKvBlocksTotal(100).setPrefillSPerToken(1e-3)
        .setActiveRequests(2).setStepS(0.020).build());
    reports.put("p", LoadReport.newBuilder().setWorkerId("p").setKvBlocksTotal(100).setPrefillSPerToken(1e-3)
        .setQueuedPrefillTokens(2000).build());
    worker("d", WorkerRole.WORKER_ROLE_DECODE, Behaviour.FINISH, "d:1");
    worker("p", WorkerRole.WORKER_ROLE_PREFILL, Behaviour.FINISH, "p:1");
    pool = pool("d", "p");
    router = Router.create(pool, Router.Config.of("kv"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while ((router.disaggregation().link("d", "p") == null
            || pool.all().stream().anyMatch(w -> w.lastLoadReport().prefillCost().perToken() == 0))
        && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    Route route = router.route(request("s", 40), null);
    var decision = route.decision();
    assertEquals("seconds", route.costName());
    // 40 tokens at 1 ms, half the step in progress, one step's token for each of the 2 streams.
    assertEquals(0.040 + 0.010 + 0.002, route.predictedCost(), 1e-9);
    // Local: the decode worker's prediction, plus the 40 ms the 2 streams would wait (stall weight 1).
    assertEquals(route.predictedCost() + 2 * 0.040, decision.localSeconds(), 1e-12, decision.toString());
    // Remote: the prefill worker's prediction (2 s of queue + 40 ms) plus what of the transfer shows:
    // 40 × 1,024 B at 1 GB/s + 100 µs over 2 layers, half hidden behind the last layer's prefill.
    double transfer = 100e-6 + 40 * 1024 / 1e9;
    assertEquals(2.040 + Math.max(transfer / 2, transfer - 0.040 / 2), decision.remoteSeconds(), 1e-9, decision.toString());
    assertTrue(!decision.split(), decision.toString());
    route.release();
  }

  /**
   * Two workers that both run ucx and tcp: the router probes the pair over each, one after the
   * other, and each split request's pull goes over the backend that moves its bytes soonest —
   * ucx's lower latency for a small prompt, tcp's higher throughput for a large one.
   */
  @Test
  void eachPullTakesTheBackendThatMovesItsBytesSoonest() throws Exception {
    backends = List.of("ucx", "tcp");
    linkFigures.put("ucx", LinkFigures.newBuilder().setBackend("ucx").setLatencyUs(20).setBytesPerS(1e9).build());
    linkFigures.put("tcp", LinkFigures.newBuilder().setBackend("tcp").setLatencyUs(200).setBytesPerS(2e9).build());
    Seen decode = worker("d", WorkerRole.WORKER_ROLE_DECODE, Behaviour.FINISH, "d:1");
    worker("p", WorkerRole.WORKER_ROLE_PREFILL, Behaviour.FINISH, "p:1");
    pool = pool("d", "p");
    router = Router.create(pool, Router.Config.of("round-robin").withSplit(new dev.tandem.router.SplitPolicy(dev.tandem.router.SplitPolicy.Mode.ALWAYS, 1)));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (router.disaggregation().links("d", "p").size() < 2 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(List.of("ucx", "tcp"), probedOver, "both backends, one at a time, in the decode worker's order");
    assertEquals(java.util.Set.of("ucx", "tcp"), router.disaggregation().links("d", "p").keySet());

    // 40 tokens × 1,024 B = 41 kB: ucx 20 µs + 41 µs, tcp 200 µs + 20 µs.
    Route small = router.route(request("small", 40), null);
    assertEquals("ucx", small.decision().kvTransferBackend());
    small.start(new Collector(pool));
    assertEquals("ucx", decode.request.get(5, TimeUnit.SECONDS).getRemotePrefill().getKvTransferBackend(), "the decode worker is told");
    // 100,000 tokens = 102 MB: ucx 102 ms, tcp 51 ms.
    Route large = router.route(request("large", 100_000), null);
    assertEquals("tcp", large.decision().kvTransferBackend());
    // A 1,000-token prompt (1 MB: ucx 1.04 ms, tcp 0.71 ms) is what link() reports.
    assertEquals(2e9, router.disaggregation().link("d", "p").bytesPerSecond());
    large.release();
  }

  /**
   * A worker whose load stream goes silent (frozen: its connection stays open, nothing answers) is
   * marked unreachable within the configured silence, and the generation hanging on it ends with
   * UNAVAILABLE at once (the frontend then moves it) and is cancelled on the worker; when reports
   * flow again the worker is routable again.
   */
  @Test
  void aWorkerSilentPastTheDeadlineIsUnreachableAndItsStreamsFailOver() throws Exception {
    Seen seen = worker("frozen", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.HANG);
    Router r = router("frozen");
    pool.unresponsiveAfter(Duration.ofMillis(400)); // load reports every 100 ms here
    Collector c = new Collector(pool);
    r.route(request("stuck", 8), null).start(c);
    seen.request.get(5, TimeUnit.SECONDS);
    long frozeAt = System.nanoTime();
    frozen.add("frozen");
    GenerationException error = c.end.get(10, TimeUnit.SECONDS);
    double afterS = (System.nanoTime() - frozeAt) / 1e9;
    assertTrue(error != null && error.kind() == GenerationException.Kind.UNAVAILABLE, String.valueOf(error));
    assertTrue(error.getMessage().contains("stopped answering"), error.getMessage());
    // The 400 ms count from the worker's last report, which came up to one report interval (100 ms)
    // before the freeze: a failure sooner than 300 ms after it would be before the deadline.
    assertTrue(afterS >= 0.3, "not before the deadline: " + afterS);
    assertTrue(!pool.all().getFirst().reachable(), "unroutable while silent");
    seen.cancelled.get(5, TimeUnit.SECONDS); // the call was cancelled on the worker too
    assertEquals(0, pool.ledger().open(), "its reservation returned");
    assertThrows(NoWorkerAvailableException.class, () -> r.route(request("meanwhile", 8), null));

    frozen.remove("frozen");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!pool.all().getFirst().reachable() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(pool.all().getFirst().reachable(), "reports again: routable again");
  }

  /**
   * A worker whose process answers (its timer reports) while its engine step never ends: past the
   * step deadline its streams fail over and it takes nothing new; a report of a step that ended
   * makes it routable again.
   */
  @Test
  void aWorkerWhoseEngineStepRunsPastTheDeadlineIsUnroutableAndItsStreamsFailOver() throws Exception {
    Seen seen = worker("hung", WorkerRole.WORKER_ROLE_AGGREGATED, Behaviour.HANG);
    Router r = router("hung");
    pool.stepTimeout(Duration.ofSeconds(2));
    Collector c = new Collector(pool);
    r.route(request("stuck", 8), null).start(c);
    seen.request.get(5, TimeUnit.SECONDS);
    reports.put("hung", LoadReport.newBuilder().setWorkerId("hung").setKvBlocksTotal(100).setActiveRequests(1).setStepRunningS(1.5).build());
    Thread.sleep(600);
    assertTrue(!c.end.isDone() && pool.all().getFirst().routable(), "a step under the deadline is a step");
    reports.put("hung", LoadReport.newBuilder().setWorkerId("hung").setKvBlocksTotal(100).setActiveRequests(1).setStepRunningS(30).build());
    GenerationException error = c.end.get(10, TimeUnit.SECONDS);
    assertTrue(error != null && error.kind() == GenerationException.Kind.UNAVAILABLE, String.valueOf(error));
    assertTrue(error.getMessage().contains("engine step has run for 30.0 s"), error.getMessage());
    seen.cancelled.get(5, TimeUnit.SECONDS);
    assertEquals(0, pool.ledger().open(), "its reservation returned");
    assertTrue(pool.all().getFirst().reachable() && !pool.all().getFirst().routable(), "reachable, but takes nothing new");
    assertThrows(NoWorkerAvailableException.class, () -> r.route(request("meanwhile", 8), null));

    reports.put("hung", LoadReport.newBuilder().setWorkerId("hung").setKvBlocksTotal(100).build());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!pool.all().getFirst().routable() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(pool.all().getFirst().routable(), "its step ended: routable again");
  }

  @Test
  void aRequestWithNothingToDecodeIsNotSplit() throws Exception {
    worker("d", WorkerRole.WORKER_ROLE_DECODE, Behaviour.FINISH, "d:1");
    worker("p", WorkerRole.WORKER_ROLE_PREFILL, Behaviour.FINISH, "p:1");
    pool = pool("d", "p");
    router = Router.create(pool, Router.Config.of("round-robin").withSplit(
        new dev.tandem.router.SplitPolicy(dev.tandem.router.SplitPolicy.Mode.ALWAYS, 1)));
    int[] prompt = new int[40];
    Route route = router.route(new GenerationRequest("one", prompt, SamplingParams.greedy(), StopConditions.maxTokens(1)), null);
    assertEquals(null, route.decision(), "max_tokens 1: the prefill is the whole request");
    assertEquals(new dev.tandem.router.LoadLedger.Routed(1, 3, 3), pool.ledger().routed(new WorkerId("d")));
    route.release();
  }

  /** The ledger's empty account, named for the assertion above. */
  private static final class LoadLedgerView {
    static dev.tandem.router.LoadLedger.Routed none() {
      return dev.tandem.router.LoadLedger.Routed.NONE;
    }
  }
}
