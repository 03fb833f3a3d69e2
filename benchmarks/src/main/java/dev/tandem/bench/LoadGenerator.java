package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A load generator speaking the OpenAI HTTP API with streaming (over {@link HttpConnection}, a
 * lean HTTP/1.1 client): sends a workload at fixed
 * concurrency or Poisson arrivals and measures TTFT, inter-token latency and end-to-end latency of
 * every request on the client side. Requests ask the server for timing ({@code "tandem":
 * {"timing": true}}) so the report can also give the frontend's overhead: client TTFT minus the
 * worker's own TTFT.
 */
public final class LoadGenerator {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final BenchConfig config;
  private final ConcurrentLinkedQueue<HttpConnection> idle = new ConcurrentLinkedQueue<>();

  public LoadGenerator(BenchConfig config) {
    this.config = config;
  }

  /** Asks the server which model it serves. */
  public static String servedModel(URI base) throws Exception {
    return servedModel(base, null);
  }

  /** The model {@code /v1/models} lists, asked with {@code apiKey} (may be null). */
  public static String servedModel(URI base, String apiKey) throws Exception {
    HttpClient c = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpRequest.Builder get = HttpRequest.newBuilder(base.resolve("/v1/models")).GET();
    if (apiKey != null && !apiKey.isEmpty()) {
      get.header("Authorization", "Bearer " + apiKey);
    }
    HttpResponse<String> r = c.send(get.build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IllegalStateException("GET /v1/models answered " + r.statusCode() + ": " + r.body());
    }
    return JSON.readTree(r.body()).path("data").path(0).path("id").asText();
  }

  public BenchReport run() throws InterruptedException {
    try {
      return runWorkload();
    } finally {
      HttpConnection c;
      while ((c = idle.poll()) != null) {
        c.close();
      }
    }
  }

  private BenchReport runWorkload() throws InterruptedException {
    List<int[]> prompts = Workload.prompts(config);
    List<Future<RequestResult>> futures = new ArrayList<>();
    long start = System.nanoTime();
    try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      if (config.requestRate() > 0) {
        Random arrivals = new Random(config.seed() ^ 0x5DEECE66DL);
        long next = System.nanoTime();
        for (int[] prompt : prompts) {
          long wait = next - System.nanoTime();
          if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
          }
          futures.add(pool.submit(() -> send(prompt)));
          double gapS = -Math.log(1 - arrivals.nextDouble()) / config.requestRate();
          next += (long) (gapS * 1e9);
        }
      } else {
        Semaphore slots = new Semaphore(config.concurrency());
        long until = config.durationS() > 0 ? start + (long) (config.durationS() * 1e9) : Long.MAX_VALUE;
        for (int i = 0; config.durationS() > 0 ? System.nanoTime() < until : i < prompts.size(); i++) {
          int[] prompt = prompts.get(i % prompts.size());
          slots.acquire();
          futures.add(
              pool.submit(
                  () -> {
                    try {
                      return send(prompt);
                    } finally {
                      slots.release();
                    }
                  }));
        }
      }
    }
    double durationS = (System.nanoTime() - start) / 1e9;
    List<RequestResult> results = new ArrayList<>();
    for (Future<RequestResult> f : futures) {
      try {
        results.add(f.get());
      } catch (java.util.concurrent.ExecutionException e) {
        results.add(RequestResult.failed(e.getCause().toString(), -1));
      }
    }
    return BenchReport.of(config, results, durationS, Workload.maxCachedTokens(prompts, 16));
  }

  private RequestResult send(int[] prompt) {
    long t0 = System.nanoTime();
    HttpConnection connection = idle.poll();
    try {
      if (connection == null) {
        connection = new HttpConnection(config.url(), config.apiKey());
      }
      byte[] json = JSON.writeValueAsBytes(body(prompt));
      String path = config.endpoint().equals("chat") ? "/v1/chat/completions" : "/v1/completions";
      StreamReader reader = new StreamReader(t0);
      t0 = System.nanoTime();
      reader.t0 = t0;
      HttpConnection.Status status = connection.post(path, json, reader::line);
      if (status.reusable()) {
        idle.add(connection);
      } else {
        connection.close();
      }
      if (status.code() != 200) {
        return RequestResult.failed("HTTP " + status.code() + ": " + status.errorBody(), ms(t0));
      }
      return reader.result();
    } catch (Exception e) {
      if (connection != null) {
        connection.close();
      }
      return RequestResult.failed(e.toString(), ms(t0));
    }
  }

  /** Parses one SSE response as its lines arrive. */
  private static final class StreamReader {
    long t0;
    double ttft = -1;
    long last = -1;
    final List<Double> itl = new ArrayList<>();
    int promptTokens;
    int cached;
    int output;
    double workerTtft = -1;
    double serverTtft = -1;
    double serverDispatch = -1;
    final List<String> workers = new ArrayList<>();
    String error;
    double e2e = -1;

    StreamReader(long t0) {
      this.t0 = t0;
    }

    boolean line(String line, long now) throws java.io.IOException {
      if (!line.startsWith("data: ")) {
        return true;
      }
      String data = line.substring(6);
      if (data.equals("[DONE]")) {
        e2e = (now - t0) / 1e6;
        return true;
      }
      JsonNode chunk = JSON.readTree(data);
      if (chunk.has("error")) {
        error = chunk.get("error").path("message").asText();
        return true;
      }
      for (JsonNode choice : chunk.path("choices")) {
        String text =
            choice.has("delta") ? choice.path("delta").path("content").asText("") : choice.path("text").asText("");
        if (!text.isEmpty()) {
          if (ttft < 0) {
            ttft = (now - t0) / 1e6;
          } else {
            itl.add((now - last) / 1e6);
          }
          last = now;
        }
      }
      if (chunk.hasNonNull("usage")) {
        JsonNode u = chunk.get("usage");
        promptTokens = u.path("prompt_tokens").asInt();
        output = u.path("completion_tokens").asInt();
        cached = u.path("prompt_tokens_details").path("cached_tokens").asInt();
      }
      if (chunk.has("tandem")) {
        workerTtft = chunk.get("tandem").path("worker_ttft_ms").asDouble(-1);
        serverTtft = chunk.get("tandem").path("ttft_ms").asDouble(-1);
        serverDispatch = chunk.get("tandem").path("dispatch_ms").asDouble(-1);
        chunk.get("tandem").path("worker_ids").forEach(w -> workers.add(w.asText()));
      }
      return true;
    }

    RequestResult result() {
      if (error != null) {
        return RequestResult.failed(error, e2e);
      }
      double end = e2e >= 0 ? e2e : (System.nanoTime() - t0) / 1e6;
      return new RequestResult(true, null, ttft, itl, end, output, promptTokens, cached, workerTtft, serverTtft, serverDispatch, workers);
    }
  }

  private ObjectNode body(int[] prompt) {
    ObjectNode b = JSON.createObjectNode();
    b.put("model", config.model());
    if (config.endpoint().equals("chat")) {
      ObjectNode m = b.putArray("messages").addObject();
      m.put("role", "user");
      m.put("content", Workload.words(prompt));
    } else {
      ArrayNode ids = b.putArray("prompt");
      for (int id : prompt) {
        ids.add(id);
      }
    }
    b.put("max_tokens", config.outputTokens());
    b.put("ignore_eos", true);
    b.put("temperature", 0);
    b.put("stream", true);
    b.putObject("stream_options").put("include_usage", true);
    b.putObject("tandem").put("timing", true);
    return b;
  }

  private static double ms(long t0) {
    return (System.nanoTime() - t0) / 1e6;
  }
}
