package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.RemotePrefillTarget;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.router.TokenListener;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerClient;
import dev.tandem.transfer.TransferBackends;
import dev.tandem.worker.WorkerServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Disaggregated serving end to end, in one process over real gRPC and real transfer backends: a
 * prefill worker computes the prompt, the decode worker pulls its KV layer by layer and generates.
 * With greedy sampling the output must be token-identical to an aggregated worker's.
 */
@org.junit.jupiter.api.Tag("e2e")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class DisaggregationTest {
  @TempDir static Path dir;
  private static Path model;
  private static BuiltinConfig engineConfig;
  private static LocalDeployment aggregated;
  private static final Map<String, LocalDeployment> disaggregated = new ConcurrentHashMap<>();
  private static final ObjectMapper JSON = new ObjectMapper();

  @BeforeAll
  static void start() throws Exception {
    model = dir.resolve("tiny");
    ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 0, model, 0);
    // A 32-token step budget: longer prompts are prefilled in chunks, and only the last chunk's
    // layers are announced to the decode worker.
    engineConfig = BuiltinConfig.of(model).withCompute("cpu", 1).withKvCacheBytes(32L << 20).withBatching(16, 32, true);
    aggregated = LocalDeployment.start(
        new LocalDeployment.Spec(1, () -> BuiltinEngine.open(engineConfig), ModelFiles.fromDirectory(model), 16,
            Router.Config.of("kv"), new FrontendServer.Config("127.0.0.1", 0, 1 << 20)));
  }

  @AfterAll
  static void stop() {
    disaggregated.values().forEach(LocalDeployment::close);
    aggregated.close();
  }

  static LocalDeployment disaggregated(String backend) {
    return disaggregated.computeIfAbsent(backend, b -> LocalDeployment.start(
        new LocalDeployment.Spec(1, () -> BuiltinEngine.open(engineConfig), ModelFiles.fromDirectory(model), 16,
                Router.Config.of("kv").withSplit(new SplitPolicy(SplitPolicy.Mode.ALWAYS, 1)),
                new FrontendServer.Config("127.0.0.1", 0, 1 << 20))
            .withDisaggregation(1, new WorkerServer.KvTransfer(b, "127.0.0.1", Duration.ofSeconds(30)), false)));
  }

  /** What a generation streamed: every token, and the first chunk (it carries the prefill facts). */
  record Generated(int[] tokens, TokenChunk first) {}

  static GenerationRequest greedy(String id, int[] prompt, int maxTokens) {
    return new GenerationRequest(id, prompt, SamplingParams.greedy(), new StopConditions(maxTokens, new int[0], true));
  }

  static Generated run(CompletableFuture<Void> done, List<TokenChunk> chunks) throws Exception {
    done.get(60, TimeUnit.SECONDS);
    List<Integer> tokens = new ArrayList<>();
    chunks.forEach(c -> java.util.Arrays.stream(c.tokens()).forEach(tokens::add));
    return new Generated(tokens.stream().mapToInt(Integer::intValue).toArray(), chunks.getFirst());
  }

  static Generated generate(Router router, GenerationRequest request) throws Exception {
    List<TokenChunk> chunks = java.util.Collections.synchronizedList(new ArrayList<>());
    CompletableFuture<Void> done = new CompletableFuture<>();
    router.generate(request, listener(chunks, done));
    return run(done, chunks);
  }

  static Generated generate(WorkerClient worker, GenerationRequest request) throws Exception {
    List<TokenChunk> chunks = java.util.Collections.synchronizedList(new ArrayList<>());
    CompletableFuture<Void> done = new CompletableFuture<>();
    worker.generate(request, listener(chunks, done));
    return run(done, chunks);
  }

  private static TokenListener listener(List<TokenChunk> chunks, CompletableFuture<Void> done) {
    return new TokenListener() {
      @Override
      public void onChunk(TokenChunk chunk) {
        chunks.add(chunk);
      }

      @Override
      public void onError(GenerationException error) {
        done.completeExceptionally(error);
      }

      @Override
      public void onCompleted() {
        done.complete(null);
      }
    };
  }

  static int[] prompt(int length, int salt) {
    return IntStream.range(0, length).map(i -> 1 + (i * 7919 + salt * 104729) % 5000).toArray();
  }

  static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  static void assertBackendAvailable(String backend) {
    var provider = TransferBackends.all().stream().filter(p -> p.name().equals(backend)).findFirst().orElseThrow();
    assumeTrue(provider.isAvailable(), backend + " is not available here: " + provider.unavailableReason());
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"tcp", "ucx", "local"})
  void disaggregatedGreedyOutputIsTokenIdenticalToAggregated(String backend) throws Exception {
    assertBackendAvailable(backend);
    LocalDeployment d = disaggregated(backend);
    int salt = backend.hashCode() & 0xffff; // fresh prompts per backend: no cache left by another run
    long kvBytesPerToken = d.router().pool().all().getFirst().description().kvBytesPerToken();
    assertEquals(dev.tandem.engine.model.ModelConfig.read(model).kvBytesPerToken(DType.BF16), kvBytesPerToken,
        "KV in bf16 by default (the model's dtype): half the bytes of f32 entries");
    // Partial single block, exactly one block, several blocks with a partial tail, and chunked.
    for (int length : new int[] {5, 16, 41, 100}) {
      int[] p = prompt(length, salt + length);
      Generated agg = generate(aggregated.router(), greedy("agg-" + backend + length, p, 12));
      Generated dis = generate(d.router(), greedy("dis-" + backend + length, p, 12));
      assertArrayEquals(agg.tokens(), dis.tokens(), backend + ", prompt of " + length);
      assertEquals("prefill-0", dis.first().origin().prefillWorkerId(), "split onto the prefill worker");
      assertEquals("", dis.first().origin().prefillFallback());
      long blocks = (length + 15) / 16;
      assertEquals(blocks * 16 * kvBytesPerToken, dis.first().origin().kvTransferBytes(), "every block pulled, keys and values of every layer");
    }
    // Prefix hit on both sides: the decode worker already holds the first 41 tokens' two full
    // blocks, so it pulls only the rest; the prefill worker computes only the uncached tail.
    int[] shared = prompt(41, salt + 41);
    int[] longer = concat(shared, prompt(30, salt + 7));
    Generated agg = generate(aggregated.router(), greedy("agg-" + backend + "-prefix", longer, 12));
    Generated dis = generate(d.router(), greedy("dis-" + backend + "-prefix", longer, 12));
    assertArrayEquals(agg.tokens(), dis.tokens(), backend + ", prompt sharing a cached prefix");
    assertEquals((5 - 2) * 16 * kvBytesPerToken, dis.first().origin().kvTransferBytes(), "two cached blocks not pulled");
    assertEquals(32, dis.first().cachedTokens(), "the prefill worker reused its cached prefix");
    // Sampled with a seed: the prefill worker draws the first token, the decode worker the rest,
    // each at its output position, as the aggregated worker draws them all.
    int[] sampled = prompt(41, salt + 99);
    SamplingParams seeded = new SamplingParams(0.9f, 1f, -1, 0f, java.util.OptionalLong.of(5), 0f, 0f, 1f, -1);
    Generated aggSeeded = generate(aggregated.router(), new GenerationRequest("agg-seeded-" + backend, sampled, seeded,
        new StopConditions(12, new int[0], true)));
    Generated disSeeded = generate(d.router(), new GenerationRequest("dis-seeded-" + backend, sampled, seeded,
        new StopConditions(12, new int[0], true)));
    assertEquals("prefill-0", disSeeded.first().origin().prefillWorkerId(), "split onto the prefill worker");
    assertArrayEquals(aggSeeded.tokens(), disSeeded.tokens(), backend + ", sampled with a seed");
    TestDeployments.assertPoolsFull(d);
  }

  /**
   * vLLM's {@code cache_salt} on a split request: the prefill worker hashes the prompt's blocks
   * under the salt as the decode worker and the router do, so the same salt again is a prefix hit
   * on the prefill worker, and no salt or another one is not; the output is the same throughout.
   */
  @Test
  void aCacheSaltHoldsOnBothSidesOfASplit() throws Exception {
    LocalDeployment d = disaggregated("tcp");
    int[] p = prompt(41, 4242);
    Generated first = generate(d.router(), greedy("salt-a", p, 6).withCacheSalt("tenant-a"));
    assertEquals("prefill-0", first.first().origin().prefillWorkerId(), "split onto the prefill worker");
    assertEquals(0, first.first().cachedTokens(), "a new prompt");
    Generated same = generate(d.router(), greedy("salt-a-again", p, 6).withCacheSalt("tenant-a"));
    assertEquals(32, same.first().cachedTokens(), "the same salt: the prefill worker's two full blocks");
    Generated none = generate(d.router(), greedy("salt-none", p, 6));
    assertEquals(0, none.first().cachedTokens(), "no salt: none of them");
    Generated other = generate(d.router(), greedy("salt-b", p, 6).withCacheSalt("tenant-b"));
    assertEquals(0, other.first().cachedTokens(), "another salt: none of them");
    assertArrayEquals(first.tokens(), same.tokens());
    assertArrayEquals(first.tokens(), none.tokens(), "the salt changes what is shared, not the output");
    assertArrayEquals(first.tokens(), other.tokens());
    TestDeployments.assertPoolsFull(d);
  }

  /**
   * A request on a LoRA adapter, split: the prefill worker computes the prompt's KV with the
   * adapter, the decode worker pulls it and goes on with the adapter, and the tokens are an
   * aggregated worker's on that adapter (not the base model's). Both sides hash the adapter's
   * blocks apart: the same prompt again is a prefix hit on the prefill worker, the base model's is not.
   * The same adapter loaded while serving goes to both workers and is split the same way.
   */
  @Test
  void aSplitRequestOnALoraAdapterMatchesAggregated() throws Exception {
    Path sql = dir.resolve("sql-adapter");
    dev.tandem.engine.modeltools.LoraGenerator.write(model, sql, 8, 16, false, dev.tandem.engine.modeltools.LoraGenerator.ALL_TARGETS, 4,
        DType.F32);
    BuiltinConfig withAdapter = engineConfig.withLora(List.of(new dev.tandem.engine.model.LoraAdapter.Source("sql", sql)), 16);
    var frontend = new FrontendServer.Config("127.0.0.1", 0, 1 << 20, Duration.ZERO,
        dev.tandem.frontend.http.Admission.open().withLoraUpdates(true));
    try (LocalDeployment agg = LocalDeployment.start(new LocalDeployment.Spec(1, () -> BuiltinEngine.open(withAdapter),
            ModelFiles.fromDirectory(model), 16, Router.Config.of("kv"), frontend));
        LocalDeployment dis = LocalDeployment.start(new LocalDeployment.Spec(1, () -> BuiltinEngine.open(withAdapter),
                ModelFiles.fromDirectory(model), 16, Router.Config.of("kv").withSplit(new SplitPolicy(SplitPolicy.Mode.ALWAYS, 1)), frontend)
            .withDisaggregation(1, new WorkerServer.KvTransfer("tcp", "127.0.0.1", Duration.ofSeconds(30)), false))) {
      int[] p = prompt(41, 77);
      Generated onAdapter = generate(agg.router(), greedy("agg-sql", p, 12).withLora("sql"));
      Generated split = generate(dis.router(), greedy("dis-sql", p, 12).withLora("sql"));
      assertArrayEquals(onAdapter.tokens(), split.tokens(), "the adapter's tokens, prefilled on one worker and decoded on another");
      assertEquals("prefill-0", split.first().origin().prefillWorkerId());
      assertEquals("", split.first().origin().prefillFallback());
      Generated base = generate(agg.router(), greedy("agg-base", p, 12));
      assertTrue(!java.util.Arrays.equals(base.tokens(), split.tokens()), "not the base model's");
      Generated again = generate(dis.router(), greedy("dis-sql-2", p, 12).withLora("sql"));
      assertEquals(32, again.first().cachedTokens(), "the adapter's blocks cached on the prefill worker");
      assertArrayEquals(split.tokens(), again.tokens());
      Generated baseSplit = generate(dis.router(), greedy("dis-base", p, 12));
      assertEquals(0, baseSplit.first().cachedTokens(), "the base model's prompt is not the adapter's");
      assertArrayEquals(base.tokens(), baseSplit.tokens());
      assertEquals(java.util.Set.of(new dev.tandem.common.WorkerId("prefill-0"), new dev.tandem.common.WorkerId("decode-0")),
          java.util.Set.copyOf(dis.router().loadLoraAdapter("sql-later", sql.toString())), "loaded on both pools");
      Generated later = generate(dis.router(), greedy("dis-later", p, 12).withLora("sql-later"));
      assertArrayEquals(onAdapter.tokens(), later.tokens(), "loaded while serving, prefilled on one worker and decoded on another");
      assertEquals("prefill-0", later.first().origin().prefillWorkerId());
      assertEquals("", later.first().origin().prefillFallback());
      TestDeployments.assertPoolsFull(dis);
    }
  }

  @Test
  void disaggregatedChatOverHttpMatchesAggregated() throws Exception {
    String body = "{\"model\":\"tiny\",\"max_tokens\":16,\"temperature\":0,\"messages\":[{\"role\":\"user\",\"content\":"
        + "\"Tell me about the lighthouse keeper and the seashells he keeps in jars by the window.\"}],"
        + "\"logprobs\":true,\"top_logprobs\":2,\"tandem\":{\"timing\":true}}";
    JsonNode agg = chat(aggregated, body);
    JsonNode dis = chat(disaggregated("tcp"), body);
    assertEquals(agg.at("/choices/0/message/content").asText(), dis.at("/choices/0/message/content").asText());
    // The first token's log-probabilities come from the prefill worker, the rest from the decode worker.
    for (int i = 0; i < 3; i++) {
      String at = "/choices/0/logprobs/content/" + i;
      assertTrue(dis.at(at + "/logprob").isNumber() && dis.at(at + "/top_logprobs/1/token").isTextual(), dis.toString());
      assertEquals(agg.at(at + "/logprob").asDouble(), dis.at(at + "/logprob").asDouble(), 1e-4, at);
      assertEquals(agg.at(at + "/top_logprobs/1/token").asText(), dis.at(at + "/top_logprobs/1/token").asText(), at);
    }
    assertEquals("prefill-0", dis.at("/tandem/prefill_worker_ids/0").asText(), dis.toString());
    assertTrue(dis.at("/tandem/kv_transfer_bytes").asLong() > 0, dis.toString());
  }

  /**
   * vLLM's beam search on a disaggregated deployment (splitting always): each step is a one-token
   * generation, which the router never splits (there is nothing to decode after the prefill's token),
   * so every step runs on the decode worker; a beam of one is the deployment's greedy output, and
   * three beams are three different sequences.
   */
  @Test
  void aBeamSearchRunsItsOneTokenStepsOnTheDecodeWorker() throws Exception {
    String chat = "{\"model\":\"tiny\",\"max_tokens\":4,\"ignore_eos\":true,\"return_token_ids\":true,\"messages\":[{\"role\":\"user\","
        + "\"content\":\"Tell me about the lighthouse keeper and the seashells he keeps in jars by the window.\"}]";
    LocalDeployment split = disaggregated("tcp");
    JsonNode greedy = chat(split, chat + ",\"temperature\":0}");
    JsonNode one = chat(split, chat + ",\"use_beam_search\":true}");
    assertEquals(greedy.at("/choices/0/token_ids").toString(), one.at("/choices/0/token_ids").toString(), one.toString());
    JsonNode three = chat(split, chat.replace("lighthouse keeper", "ferryman") + ",\"use_beam_search\":true,\"n\":3,"
        + "\"tandem\":{\"timing\":true}}");
    java.util.Set<String> beams = new java.util.HashSet<>();
    three.get("choices").forEach(c -> beams.add(c.get("token_ids").toString()));
    assertEquals(3, beams.size(), three.toString());
    assertEquals("[\"decode-0\"]", three.at("/tandem/worker_ids").toString(), three.toString());
    assertTrue(three.at("/tandem/prefill_worker_ids").isMissingNode() || three.at("/tandem/prefill_worker_ids").isEmpty(),
        "no step was split: " + three);
  }

  /**
   * An embedding on a disaggregated deployment: a one-token generation, so never split, computed by
   * the decode worker (prefill workers take no whole requests) — the aggregated deployment's vector.
   */
  @Test
  void anEmbeddingOnADisaggregatedDeploymentIsTheAggregatedOnesVector() throws Exception {
    String body = "{\"model\":\"tiny\",\"input\":\"The lighthouse keeper keeps seashells in jars by the window, one for every storm.\"}";
    JsonNode agg = TestDeployments.json(TestDeployments.post(aggregated, "/v1/embeddings", body));
    JsonNode dis = TestDeployments.json(TestDeployments.post(disaggregated("tcp"), "/v1/embeddings", body));
    double dot = 0;
    for (int i = 0; i < agg.at("/data/0/embedding").size(); i++) {
      dot += agg.at("/data/0/embedding/" + i).asDouble() * dis.at("/data/0/embedding/" + i).asDouble();
    }
    assertEquals(1.0, dot, 1e-4, "cosine of two unit vectors: " + dis);
    TestDeployments.assertPoolsFull(disaggregated("tcp"));
  }

  private static JsonNode chat(LocalDeployment d, String body) throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + d.port() + "/v1/chat/completions"))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  @Test
  void autoKeepsPromptsLocalWhenPrefillAndDecodeShareCpus() throws Exception {
    // One process, no pinning: both roles compute on the same CPUs, so a remote prefill would stall
    // the decode worker's streams just as a local one does, and the transfer only adds time.
    try (LocalDeployment d = LocalDeployment.start(
        new LocalDeployment.Spec(1, () -> BuiltinEngine.open(engineConfig), ModelFiles.fromDirectory(model), 16,
                Router.Config.of("kv"), new FrontendServer.Config("127.0.0.1", 0, 1 << 20))
            .withDisaggregation(1, new WorkerServer.KvTransfer("tcp", "127.0.0.1", Duration.ofSeconds(30)), false))) {
      generate(d.router(), greedy("first", prompt(40, 11), 4)); // nothing decoding yet: local
      WorkerClient decode = d.router().pool().all().stream().filter(w -> !w.isPrefillOnly()).findFirst().orElseThrow();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (decode.lastLoadReport().prefillTokensPerSecond() <= 0 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertTrue(decode.lastLoadReport().prefillTokensPerSecond() > 0 && decode.lastLoadReport().prefillCost().perToken() > 0,
          "the decode worker reports its prefill cost: " + decode.lastLoadReport());
      Generated g = generate(d.router(), greedy("second", prompt(100, 12), 4));
      assertEquals("", g.first().origin().prefillWorkerId(), "prefilled locally");
      SplitPolicy.Decision decision = d.router().disaggregation().lastDecision();
      assertTrue(!decision.split() && decision.reason().contains("shares"), decision.toString());
      assertEquals(0, d.router().disaggregation().splits());
      assertEquals(2, d.router().disaggregation().keptLocal());
    }
  }

  @Test
  void linkIsProbedAndReportedToTheRouter() {
    LocalDeployment d = disaggregated("tcp");
    SplitPolicy.Link link = d.router().disaggregation().link("decode-0", "prefill-0");
    assertNotNull(link, "the decode worker measured its link to the prefill worker at startup");
    assertTrue(link.bytesPerSecond() > 1e6 && link.latencySeconds() >= 0, link.toString()); // the fitted fixed cost may be 0
  }

  /**
   * {@code --kv-transfer auto} with libucx0 installed: each worker runs ucx and tcp over the same
   * KV memory, the router measures the pair's link over both, and each pull takes the backend
   * that moves its bytes soonest by those figures. Either backend, named per request, gives the
   * same tokens; a backend the workers do not run makes the decode worker prefill itself.
   */
  @Test
  void autoRunsEveryBackendAndEachPullTakesTheFasterMeasuredOne() throws Exception {
    assertBackendAvailable("ucx");
    LocalDeployment d = disaggregated("auto");
    d.router().disaggregation().awaitLinkProbes(Duration.ofMinutes(2));
    WorkerClient decode = d.router().pool().all().stream().filter(w -> !w.isPrefillOnly()).findFirst().orElseThrow();
    WorkerClient prefill = d.router().pool().all().stream().filter(WorkerClient::isPrefillOnly).findFirst().orElseThrow();
    for (WorkerClient w : List.of(decode, prefill)) {
      assertEquals(List.of("ucx", "tcp"), w.description().kvTransferBackends(),
          w.workerId() + " runs ucx (primary) and tcp beside it");
    }
    Map<String, SplitPolicy.Link> links = d.router().disaggregation().links("decode-0", "prefill-0");
    assertEquals(java.util.Set.of("ucx", "tcp"), links.keySet(), "the pair was measured over both: " + links);
    links.values().forEach(l -> assertTrue(l.bytesPerSecond() > 1e6, l.toString()));

    int[] p = prompt(100, 4242);
    long bytes = 100L * decode.description().kvBytesPerToken();
    String expected = links.entrySet().stream()
        .min(java.util.Comparator.comparingDouble(e -> e.getValue().latencySeconds() + bytes / e.getValue().bytesPerSecond()))
        .orElseThrow().getKey();
    Generated agg = generate(aggregated.router(), greedy("agg-auto", p, 12));
    Generated dis = generate(d.router(), greedy("dis-auto", p, 12));
    assertArrayEquals(agg.tokens(), dis.tokens());
    assertEquals("prefill-0", dis.first().origin().prefillWorkerId());
    assertEquals(expected, d.router().disaggregation().lastDecision().kvTransferBackend(), "the faster link for these bytes: " + links);

    // Each backend, named explicitly (fresh prompts: no cached prefix on either side).
    for (String backend : List.of("ucx", "tcp")) {
      int[] q = prompt(100, backend.equals("ucx") ? 4243 : 4244);
      Generated want = generate(aggregated.router(), greedy("agg-" + backend, q, 12));
      Generated got = generate(decode, greedy("over-" + backend, q, 12)
          .withRemotePrefill(new RemotePrefillTarget(prefill.address(), prefill.workerId(), 0, backend)));
      assertArrayEquals(want.tokens(), got.tokens(), "pulled over " + backend);
      assertEquals("", got.first().origin().prefillFallback(), backend);
      assertEquals(100L / 16 * 16 * decode.description().kvBytesPerToken() + 16 * decode.description().kvBytesPerToken(),
          got.first().origin().kvTransferBytes(), "every block pulled over " + backend);
    }
    int[] r = prompt(40, 4250);
    Generated want = generate(aggregated.router(), greedy("agg-none", r, 8));
    Generated got = generate(decode, greedy("over-none", r, 8)
        .withRemotePrefill(new RemotePrefillTarget(prefill.address(), prefill.workerId(), 0, "rdma")));
    assertArrayEquals(want.tokens(), got.tokens(), "prefilled locally instead");
    assertTrue(got.first().origin().prefillFallback().contains("rdma"), got.first().origin().prefillFallback());
    TestDeployments.assertPoolsFull(d);
  }

  /**
   * One prefill and one decode worker over TCP, configured apart, under an always-split policy. The
   * prefill worker starts first (LocalDeployment starts them in order), so it gets {@code prefill}.
   */
  private static LocalDeployment alwaysSplitPair(Path modelDir, BuiltinConfig prefill, BuiltinConfig decode) {
    java.util.concurrent.atomic.AtomicInteger started = new java.util.concurrent.atomic.AtomicInteger();
    return LocalDeployment.start(
        new LocalDeployment.Spec(1, () -> BuiltinEngine.open(started.getAndIncrement() == 0 ? prefill : decode),
                ModelFiles.fromDirectory(modelDir), 16,
                Router.Config.of("kv").withSplit(new SplitPolicy(SplitPolicy.Mode.ALWAYS, 1)),
                new FrontendServer.Config("127.0.0.1", 0, 1 << 20))
            .withDisaggregation(1, new WorkerServer.KvTransfer("tcp", "127.0.0.1", Duration.ofSeconds(30)), false));
  }

  /**
   * A prefill worker storing bf16 KV and a decode worker storing f32 are never paired: the router
   * keeps every request on the decode worker even under an always-split policy, and a decode
   * worker told to pull from it anyway refuses the layout and prefills locally.
   */
  @Test
  void workersWithDifferentKvCacheDtypesAreNeverPaired() throws Exception {
    LocalDeployment d = alwaysSplitPair(model, engineConfig, engineConfig.withKvCacheDtype(DType.F32)); // bf16 prefill, f32 decode
    try {
      WorkerClient decode = d.router().pool().all().stream().filter(w -> !w.isPrefillOnly()).findFirst().orElseThrow();
      WorkerClient prefill = d.router().pool().all().stream().filter(WorkerClient::isPrefillOnly).findFirst().orElseThrow();
      assertEquals("bf16", prefill.description().kvCacheDtype());
      assertEquals("f32", decode.description().kvCacheDtype());
      assertEquals(2 * prefill.description().kvBytesPerToken(), decode.description().kvBytesPerToken(), "f32 entries take twice the bytes");
      assertTrue(d.router().disaggregation().links("decode-0", "prefill-0").isEmpty(), "the pair's link was never probed");

      Generated routed = generate(d.router(), greedy("mixed-kv", prompt(40, 4260), 8));
      assertEquals(8, routed.tokens().length);
      assertEquals("", routed.first().origin().prefillWorkerId(), "kept on the decode worker despite the always-split policy");
      assertEquals(0, d.router().disaggregation().splits());

      Generated direct = generate(decode, greedy("mixed-kv-direct", prompt(40, 4261), 8)
          .withRemotePrefill(new RemotePrefillTarget(prefill.address(), prefill.workerId(), 0, "tcp")));
      assertEquals(8, direct.tokens().length);
      assertTrue(direct.first().origin().prefillFallback().contains("--kv-cache-dtype"), direct.first().origin().prefillFallback());
      TestDeployments.assertPoolsFull(d);
    } finally {
      d.close();
    }
  }

  /**
   * A LongRoPE model's prefill worker serving past the model's original context (long factors)
   * and a decode worker serving within it (short factors) rotate keys differently: they say so
   * when they join and the router never pairs them, even under an always-split policy.
   */
  @Test
  void longRopeWorkersOnEitherSideOfTheOriginalContextAreNeverPaired() throws Exception {
    Path longRope = dir.resolve("tiny-longrope");
    var config = ModelGenerator.shape("tiny").put("max_position_embeddings", 1024).put("original_max_position_embeddings", 64);
    var rope = config.putObject("rope_scaling").put("type", "longrope");
    for (int i = 0; i < 8; i++) { // head_dim 16: one factor per rotated pair
      rope.withArray("short_factor").add(1 + i / 10.0);
      rope.withArray("long_factor").add(2 + i);
    }
    ModelGenerator.write(config, DType.BF16, 0, longRope, 0);
    BuiltinConfig base = BuiltinConfig.of(longRope).withCompute("cpu", 1).withKvCacheBytes(16L << 20);
    LocalDeployment d = alwaysSplitPair(longRope, base, base.withMaxContextLength(64)); // 1,024 tokens (long factors), 64 (short)
    try {
      WorkerClient decode = d.router().pool().all().stream().filter(w -> !w.isPrefillOnly()).findFirst().orElseThrow();
      WorkerClient prefill = d.router().pool().all().stream().filter(WorkerClient::isPrefillOnly).findFirst().orElseThrow();
      assertEquals("longrope-long", prefill.description().kvKeyRotation());
      assertEquals("longrope-short", decode.description().kvKeyRotation());
      assertTrue(d.router().disaggregation().links("decode-0", "prefill-0").isEmpty(), "the pair's link was never probed");
      Generated routed = generate(d.router(), greedy("mixed-rope", prompt(40, 4270), 8));
      assertEquals(8, routed.tokens().length);
      assertEquals("", routed.first().origin().prefillWorkerId(), "kept on the decode worker despite the always-split policy");
      assertEquals(0, d.router().disaggregation().splits());
      TestDeployments.assertPoolsFull(d);
    } finally {
      d.close();
    }
  }
}
