package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.RemotePrefillTarget;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.discovery.EtcdDiscovery;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.router.Generation;
import dev.tandem.router.Route;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.TokenListener;
import dev.tandem.router.grpc.DiscoveredWorkers;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerClient;
import dev.tandem.router.grpc.WorkerPool;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Disaggregation across hosts, on one machine over a real network: etcd on host tdm-front, a
 * prefill worker on tdm-prefill and a decode worker on tdm-decode, each a network namespace with
 * its own address joined by veth pairs to a bridge (benchmarks/scripts/netns.sh; needs root and
 * iproute2, as CI has), and this test's router on the bridge, finding the workers through etcd.
 * What the prefill host sends is shaped with tc tbf. The decode worker's measured link follows the
 * shaped rate; the split policy splits a long prompt beside a decoding stream over a fast link and
 * keeps it local over a slow one; greedy output is the same split or not. KV over tcp.
 */
@org.junit.jupiter.api.Tag("e2e")
class NetnsDisaggTest {
  private static final Path NETNS = Path.of("..", "benchmarks", "scripts", "netns.sh").toAbsolutePath().normalize();
  private static final String ETCD = "http://10.77.0.10:2379";
  private final List<Process> processes = new ArrayList<>();
  /** The model, etcd's data and each process's log; kept where a test fails, to read. */
  @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs;

  @AfterEach
  void tearDown() throws Exception {
    TestDeployments.stopAll(processes, false, 10);
    sh(NETNS.toString(), "down");
  }

  private static int sh(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", cmd));
    if (p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", cmd) + " exited " + p.exitValue() + ": " + out);
    }
    return p.exitValue();
  }

  private Process on(String host, String name, String... cmd) throws IOException {
    List<String> all = new ArrayList<>(List.of("ip", "netns", "exec", "tdm-" + host));
    all.addAll(List.of(cmd));
    Process p = new ProcessBuilder(all).redirectErrorStream(true).redirectOutput(logs.resolve(name + ".log").toFile()).start();
    processes.add(p);
    return p;
  }

  private void worker(String role, String ip, String cpu, Path model) throws IOException {
    List<String> cmd = new ArrayList<>(List.of("taskset", "-c", cpu));
    cmd.addAll(TestDeployments.tandemCommand("worker",
        "--role", role, "--host", ip, "--port", "9000", "--metrics-port", "9100", "--worker-id", role + "-0",
        "--model", model.toString(), "--kv-cache-memory", "256m", "--max-context-length", "4096",
        "--no-chunked-prefill", "--max-batched-tokens", "4096", "--kv-transfer", "tcp",
        "--discovery", "etcd", "--etcd-endpoints", ETCD, "--discovery-ttl-s", "5"));
    on(role, role, cmd.toArray(String[]::new));
  }

  @Test
  void theSplitFollowsTheShapedLinkAndGreedyOutputIsTheSameEitherWay() throws Exception {
    Assumptions.assumeTrue("0".equals(new String(new ProcessBuilder("id", "-u").start().getInputStream().readAllBytes()).strip()),
        "needs root for network namespaces and tc (CI runs as root)");
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/sbin/ip")) || Files.isExecutable(Path.of("/sbin/ip")) || Files.isExecutable(Path.of("/usr/bin/ip")),
        "needs iproute2 (apt-get install iproute2)");
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/etcd")), "needs etcd (apt-get install etcd-server)");
    Path model = logs.resolve("llama-100m");
    ModelGenerator.write(ModelGenerator.shape("llama-100m"), DType.BF16, 1, model, 0);
    sh(NETNS.toString(), "up");
    on("front", "etcd", "etcd", "--data-dir", logs.resolve("etcd").toString(), "--listen-client-urls", ETCD, "--advertise-client-urls", ETCD,
        "--listen-peer-urls", "http://10.77.0.10:2380", "--initial-advertise-peer-urls", "http://10.77.0.10:2380",
        "--initial-cluster", "default=http://10.77.0.10:2380");
    worker("prefill", "10.77.0.11", "0", model);
    worker("decode", "10.77.0.12", "1", model);

    sh(NETNS.toString(), "shape", "40mbit");
    try (EtcdDiscovery etcd = new EtcdDiscovery(List.of(URI.create(ETCD)), "default", Duration.ofSeconds(5));
        WorkerPool pool = new WorkerPool(16, Duration.ofSeconds(300), Duration.ofMillis(250));
        DiscoveredWorkers followed = DiscoveredWorkers.follow(etcd, pool)) {
      TestDeployments.await("both workers admitted through etcd", 300, () -> pool.routable().size() == 2);
      WorkerClient prefill = pool.all().stream().filter(WorkerClient::isPrefillOnly).findFirst().orElseThrow();
      WorkerClient decode = pool.all().stream().filter(w -> !w.isPrefillOnly()).findFirst().orElseThrow();
      assertEquals("10.77.0.11:9000", prefill.address());

      // (a) The link the decode worker measures is the shaped one: 40 Mbit/s = 5 MB/s.
      double slow = probe(pool, SplitPolicy.Mode.AUTO, r -> {});
      assertEquals(5e6, slow, 0.15 * 5e6, "measured " + slow + " B/s over a 40 Mbit/s link");

      // (c) Greedy output is the same prefilled across the link or locally.
      int[] prompt = prompt(300, 7);
      int[] split = tokens(decode, new GenerationRequest("split", prompt, SamplingParams.greedy(), StopConditions.maxTokens(12))
          .withRemotePrefill(new RemotePrefillTarget(prefill.address(), prefill.workerId())));
      int[] local = tokens(decode, new GenerationRequest("local", prompt, SamplingParams.greedy(), StopConditions.maxTokens(12)));
      assertArrayEquals(local, split);

      // (b) Beside a decoding stream, a long prompt is kept local over a slow link, split over a fast one.
      // 8 Mbit/s: the prompt's 19.7 MB of KV take ~20 s, against a ~2.5 s prefill and its stall.
      sh(NETNS.toString(), "shape", "8mbit");
      SplitPolicy.Decision overSlow = besideAStream(decode, () -> decide(pool, prompt(1200, 11)));
      assertFalse(overSlow.split(), "over 8 Mbit/s: " + overSlow);
      sh(NETNS.toString(), "shape", "2gbit");
      SplitPolicy.Decision overFast = besideAStream(decode, () -> decide(pool, prompt(1200, 11)));
      assertTrue(overFast.split(), "over 2 Gbit/s: " + overFast);
      assertTrue(overFast.transferSeconds() < overSlow.transferSeconds() / 10, overFast + " vs " + overSlow);
    }
  }

  private interface Decide {
    SplitPolicy.Decision run() throws Exception;
  }

  /**
   * Runs {@code decide} while one stream decodes on {@code decode} (a new one each time: a stream
   * ends at the context window, which a fast decode reaches in under a minute).
   */
  private static SplitPolicy.Decision besideAStream(WorkerClient decode, Decide decide) throws Exception {
    // 4,000 tokens fit the 4,096-token window after the 64-token prompt: tens of seconds of decoding.
    Discard listener = new Discard();
    Generation stream = decode.generate(new GenerationRequest("stream-" + System.nanoTime(), prompt(64, 3), SamplingParams.greedy(),
        new StopConditions(4_000, new int[0], true)), listener);
    try {
      TestDeployments.await("the stream decodes", 30, () -> {
        assertEquals(null, listener.error, "the stream was refused");
        return decode.lastLoadReport().activeRequests() == 1;
      });
      SplitPolicy.Decision d = decide.run();
      assertEquals(1, decode.lastLoadReport().activeRequests(), "the stream still decoding when the router decided");
      return d;
    } finally {
      stream.cancel("done");
      TestDeployments.await("the stream cancelled", 30, () -> decode.lastLoadReport().activeRequests() == 0);
    }
  }

  /** A fresh router over the pool (so that it probes the link now); returns the measured B/s. */
  private static double probe(WorkerPool pool, SplitPolicy.Mode mode, java.util.function.Consumer<Router> use) throws Exception {
    try (Router router = Router.create(pool, Router.Config.of("kv").withSplit(new SplitPolicy(mode, 1.0)))) {
      router.disaggregation().awaitLinkProbes(Duration.ofSeconds(120));
      SplitPolicy.Link link = router.disaggregation().link("decode-0", "prefill-0");
      assertNotNull(link, "the decode worker probed the prefill worker");
      use.accept(router);
      return link.bytesPerSecond();
    }
  }

  private static SplitPolicy.Decision decide(WorkerPool pool, int[] prompt) throws Exception {
    SplitPolicy.Decision[] out = new SplitPolicy.Decision[1];
    probe(pool, SplitPolicy.Mode.AUTO, router -> {
      Route r = router.route(new GenerationRequest("decide", prompt, SamplingParams.greedy(), StopConditions.maxTokens(8)), null);
      out[0] = r.decision();
      r.release();
    });
    assertNotNull(out[0], "a prefill worker was there to decide about");
    return out[0];
  }

  private static int[] tokens(WorkerClient worker, GenerationRequest request) throws Exception {
    CompletableFuture<int[]> done = new CompletableFuture<>();
    List<Integer> ids = new ArrayList<>();
    worker.generate(request, new TokenListener() {
      @Override
      public void onChunk(TokenChunk chunk) {
        for (int id : chunk.tokens()) {
          ids.add(id);
        }
        if (chunk.finished()) {
          done.complete(ids.stream().mapToInt(Integer::intValue).toArray());
        }
      }

      @Override
      public void onError(GenerationException error) {
        done.completeExceptionally(error);
      }

      @Override
      public void onCompleted() {}
    });
    return done.get(120, TimeUnit.SECONDS);
  }

  /** Drops a stream's tokens; keeps its error, if any. */
  private static final class Discard implements TokenListener {
    volatile GenerationException error;

    @Override
    public void onChunk(TokenChunk chunk) {}

    @Override
    public void onError(GenerationException error) {
      this.error = error;
    }

    @Override
    public void onCompleted() {}
  }

  private static int[] prompt(int tokens, int salt) {
    int[] ids = new int[tokens];
    for (int i = 0; i < tokens; i++) {
      ids[i] = 1000 + (int) ((i * 7919L + salt * 104_729L) % 50_000);
    }
    return ids;
  }

}
