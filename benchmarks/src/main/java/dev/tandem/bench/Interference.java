package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * DistServe's interference point, measured through the HTTP API: {@code streams} requests decode
 * steadily, then one long prompt arrives. Prints the steady streams' normal inter-token latency
 * (median before the arrival), their maximum inter-token gap from the arrival until the long
 * request's first token plus one second (and the five largest gaps, with when they ended), and the
 * long request's time to first token with the worker and transfer facts the server reports
 * ({@code "tandem": {"timing": true}}). With ARRIVALS &gt; 1 long prompts arrive one after
 * another, each measured on its own; the first one after start also compiles the code paths a
 * long prompt takes.
 *
 * <pre>Interference BASE_URL MODEL STREAMS LONG_PROMPT_TOKENS [WARM_S] [ARRIVALS] [SALT]</pre>
 *
 * <p>SALT (default 7) picks the long prompts' tokens; give each run against the same workers its
 * own, or their prefix caches hold the prompt already.
 */
public final class Interference {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    URI base = URI.create(args[0]);
    String model = args[1];
    int streams = Integer.parseInt(args[2]);
    int longTokens = Integer.parseInt(args[3]);
    double warmSeconds = args.length > 4 ? Double.parseDouble(args[4]) : 5;
    int longArrivals = args.length > 5 ? Integer.parseInt(args[5]) : 1;
    int longSalt = args.length > 6 ? Integer.parseInt(args[6]) : 7;

    // Warm-up: one prompt so that the engines have measured their prefill speed and JIT-compiled.
    try (HttpConnection c = new HttpConnection(base)) {
      var status = c.post("/v1/completions", body(model, prompt(512, 99), 2, false, false), (line, at) -> true);
      if (status.code() != 200) {
        throw new IllegalStateException("warm-up request failed: " + status);
      }
    }
    Thread.sleep(1500); // a load report or two

    AtomicBoolean stop = new AtomicBoolean();
    List<long[]> arrivals = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    CountDownLatch started = new CountDownLatch(streams);
    for (int s = 0; s < streams; s++) {
      long[] times = new long[200_000];
      arrivals.add(times);
      int salt = s;
      threads.add(Thread.ofPlatform().name("stream-" + s).start(() -> {
        int[] count = {0};
        try (HttpConnection c = new HttpConnection(base)) {
          var status = c.post("/v1/completions", body(model, prompt(64, 1000 + salt), 6_000, true, false), (line, at) -> {
            if (line.startsWith("data: {")) {
              if (count[0] == 0) {
                started.countDown();
              }
              if (count[0] < times.length) {
                times[count[0]++] = at;
              }
            }
            return !stop.get();
          });
          if (status.code() != 200) {
            System.err.println("stream " + salt + " refused: " + status);
            System.exit(1);
          }
        } catch (Exception e) {
          if (!stop.get()) {
            System.err.println("stream " + salt + " failed: " + e);
          }
        }
        times[times.length - 1] = count[0];
      }));
    }
    started.await();
    if (streams == 0) {
      warmSeconds = Math.min(warmSeconds, 1);
    }
    Thread.sleep((long) (warmSeconds * 1000));
    // Each arrival waits for the previous one's window to end; the first one after start also
    // pays for compiling the long-prompt paths, so later ones show the steady state.
    List<Long> arrivalTimes = new ArrayList<>();
    List<JsonNode> answers = new ArrayList<>();
    for (int k = 0; k < longArrivals; k++) {
      long arrival = System.nanoTime();
      try (HttpConnection c = new HttpConnection(base)) {
        StringBuilder text = new StringBuilder();
        var status = c.post("/v1/completions", body(model, prompt(longTokens, longSalt + 1000 * k), 4, false, true), (line, at) -> {
          text.append(line);
          return true;
        });
        if (status.code() != 200) {
          throw new IllegalStateException("long request failed: " + status);
        }
        arrivalTimes.add(arrival);
        answers.add(JSON.readTree(text.toString()));
      }
      Thread.sleep(1000 + (long) (warmSeconds * 1000));
    }
    stop.set(true);
    for (Thread t : threads) {
      t.join(30_000);
    }

    for (int k = 0; k < longArrivals; k++) {
      long arrival = arrivalTimes.get(k);
      JsonNode longAnswer = answers.get(k);
      double ttft = longAnswer.at("/tandem/ttft_ms").asDouble();
      long windowEnd = arrival + (long) ((ttft + 1000) * 1e6);
      long previousEnd = k == 0 ? Long.MIN_VALUE : arrivalTimes.get(k - 1) + (long) ((answers.get(k - 1).at("/tandem/ttft_ms").asDouble() + 1000) * 1e6);
      List<Double> before = new ArrayList<>();
      List<double[]> during = new ArrayList<>(); // gap ms, seconds after the arrival at which it ended
      for (long[] times : arrivals) {
        int n = (int) Math.min(times[times.length - 1], times.length - 1);
        for (int i = 1; i < n; i++) {
          double gap = (times[i] - times[i - 1]) / 1e6;
          if (times[i] < arrival && times[i - 1] > previousEnd) {
            before.add(gap);
          } else if (times[i] >= arrival && times[i - 1] < windowEnd) {
            during.add(new double[] {gap, (times[i] - arrival) / 1e9});
          }
        }
      }
      during.sort((a, b) -> Double.compare(b[0], a[0]));
      double maxDuring = during.isEmpty() ? 0 : during.get(0)[0];
      double maxAt = during.isEmpty() ? Double.NaN : during.get(0)[1];
      StringBuilder top = new StringBuilder("[");
      for (int i = 0; i < Math.min(5, during.size()); i++) {
        top.append(i == 0 ? "" : ",").append(String.format("%.0f@%.2f", during.get(i)[0], during.get(i)[1]));
      }
      top.append(']');
      double[] sorted = before.stream().mapToDouble(Double::doubleValue).sorted().toArray();
      double median = sorted.length == 0 ? Double.NaN : sorted[sorted.length / 2]; // NaN without streams
      double p99 = sorted.length == 0 ? Double.NaN : sorted[(int) (sorted.length * 0.99)];
      JsonNode t = longAnswer.get("tandem");
      System.out.printf(
          "arrival=%d streams=%d long_prompt=%d normal_itl_ms=%.1f normal_itl_p99_ms=%.1f max_itl_during_ms=%.1f max_at_s=%.1f ratio=%.2f top_gaps_ms_at_s=%s long_ttft_ms=%.0f prefill=%s kv_transfer_ms=%s kv_exposed_ms=%s kv_bytes=%s decision=%s fallback=%s output_hash=%08x%n",
          k + 1, streams, longAnswer.at("/usage/prompt_tokens").asInt(), median, p99, maxDuring, maxAt, maxDuring / median, top, ttft,
          t.has("prefill_worker_ids") ? t.get("prefill_worker_ids").toString() : "local",
          t.has("kv_transfer_ms") ? String.format("%.1f", t.get("kv_transfer_ms").asDouble()) : "-",
          t.has("kv_exposed_ms") ? String.format("%.1f", t.get("kv_exposed_ms").asDouble()) : "-",
          t.has("kv_transfer_bytes") ? t.get("kv_transfer_bytes").asText() : "-",
          t.has("split_decision") ? t.get("split_decision").toString().replace(' ', '_') : "-",
          t.has("prefill_fallback") ? t.get("prefill_fallback").asText() : "-",
          longAnswer.at("/choices/0/text").asText().hashCode());
    }
    System.exit(0); // streams may still be draining on the server
  }

  /** {@code tokens} token ids that repeat rarely, so nothing is a cached prefix by accident. */
  static int[] prompt(int tokens, int salt) {
    int[] ids = new int[tokens];
    for (int i = 0; i < tokens; i++) {
      ids[i] = 1000 + (int) ((i * 7919L + salt * 104_729L) % 50_000);
    }
    return ids;
  }

  static byte[] body(String model, int[] prompt, int maxTokens, boolean stream, boolean timing) {
    ObjectNode b = JSON.createObjectNode().put("model", model).put("max_tokens", maxTokens).put("stream", stream)
        .put("temperature", 0).put("ignore_eos", true);
    var p = b.putArray("prompt");
    Arrays.stream(prompt).forEach(p::add);
    if (timing) {
      b.putObject("tandem").put("timing", true);
    }
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }
}
