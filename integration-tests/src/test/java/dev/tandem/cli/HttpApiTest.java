package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.mocker.TimingModel;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The HTTP API over raw HTTP: SSE framing, the error contract, and the side endpoints. */
@org.junit.jupiter.api.Tag("e2e")
class HttpApiTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String M = TestDeployments.MODEL;
  private static LocalDeployment deployment;
  private static HttpClient http;
  private static URI base;

  @BeforeAll
  static void start() {
    deployment = TestDeployments.start(2, TimingModel.noDelay(), 1 << 20);
    http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    base = URI.create("http://127.0.0.1:" + deployment.port());
  }

  @AfterAll
  static void stop() {
    http.close();
    deployment.close();
  }

  private static HttpResponse<String> post(String path, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(base.resolve(path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(base.resolve(path)).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String ids(int n) {
    return IntStream.range(0, n).mapToObj(i -> Integer.toString(1000 + i)).collect(Collectors.joining(",", "[", "]"));
  }

  @Test
  void sseFramingEndsWithDoneAndCarriesUsage() throws Exception {
    HttpResponse<String> r = post("/v1/chat/completions", """
        {"model": "%s", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
         "stream": true, "stream_options": {"include_usage": true}, "tandem": {"timing": true}}""".formatted(M));
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("content-type").orElseThrow().startsWith("text/event-stream"));
    String body = r.body();
    assertTrue(body.endsWith("data: [DONE]\n\n"), body);
    String[] events = body.split("\n\n");
    for (String e : events) {
      assertTrue(e.startsWith("data: ") && !e.substring(6).contains("\n"), "bad event: " + e);
    }
    List<JsonNode> chunks = new ArrayList<>();
    for (int i = 0; i < events.length - 1; i++) {
      chunks.add(JSON.readTree(events[i].substring(6)));
    }
    assertEquals("assistant", chunks.getFirst().at("/choices/0/delta/role").asText());
    assertEquals("chat.completion.chunk", chunks.getFirst().get("object").asText());
    JsonNode finish = chunks.get(chunks.size() - 2);
    assertEquals("length", finish.at("/choices/0/finish_reason").asText());
    assertTrue(finish.at("/tandem/worker_ttft_ms").asDouble() >= 0);
    // Handed to the worker after the request arrived and before its first token came back.
    double dispatch = finish.at("/tandem/dispatch_ms").asDouble(-1);
    assertTrue(dispatch >= 0 && dispatch <= finish.at("/tandem/ttft_ms").asDouble(), finish.get("tandem").toString());
    assertEquals(1, finish.at("/tandem/worker_ids").size());
    JsonNode usage = chunks.getLast();
    assertEquals(0, usage.get("choices").size());
    assertEquals(4, usage.at("/usage/completion_tokens").asInt());
    assertTrue(usage.at("/usage/prompt_tokens_details/cached_tokens").isNumber());
    TestDeployments.assertPoolsFull(deployment);
  }

  @Test
  void completionsAcceptStringsListsAndTokenIds() throws Exception {
    JsonNode batch = JSON.readTree(post("/v1/completions", """
        {"model": "%s", "prompt": ["one", "two"], "max_tokens": 3, "n": 2}""".formatted(M)).body());
    assertEquals(4, batch.get("choices").size());
    assertEquals(List.of(0, 1, 2, 3), batch.get("choices").findValues("index").stream().map(JsonNode::asInt).toList());
    JsonNode tokens = JSON.readTree(post("/v1/completions", """
        {"model": "%s", "prompt": %s, "max_tokens": 2}""".formatted(M, ids(40))).body());
    assertEquals(40, tokens.at("/usage/prompt_tokens").asInt());
    TestDeployments.assertPoolsFull(deployment);
  }

  @Test
  void prefixCacheHitsAreReportedInUsageWhenPinnedToOneWorker() throws Exception {
    String body = """
        {"model": "%s", "prompt": %s, "max_tokens": 1, "tandem": {"worker_id": "worker-1"}}""".formatted(M, ids(100));
    post("/v1/completions", body);
    JsonNode second = JSON.readTree(post("/v1/completions", body).body());
    assertEquals(96, second.at("/usage/prompt_tokens_details/cached_tokens").asInt(), second.toString());
  }

  /**
   * vLLM's {@code cache_salt}: a prompt cached under one salt is a hit for the same salt only —
   * not for another salt, nor for a request without one — on the same worker.
   */
  @Test
  void aCacheSaltSharesCachedBlocksOnlyWithTheSameSalt() throws Exception {
    String prompt = ids(100).replace("[1000,", "[7,"); // a prompt no other test sends
    java.util.function.Function<String, String> body = salt -> """
        {"model": "%s", "prompt": %s, "max_tokens": 1, %s"tandem": {"worker_id": "worker-1"}}""".formatted(M, prompt, salt);
    java.util.function.Function<String, Integer> cached = salt -> {
      try {
        HttpResponse<String> r = post("/v1/completions", body.apply(salt));
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body()).at("/usage/prompt_tokens_details/cached_tokens").asInt();
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    };
    assertEquals(0, cached.apply("\"cache_salt\": \"tenant-a\", "), "a new prompt");
    assertEquals(96, cached.apply("\"cache_salt\": \"tenant-a\", "), "the same salt: its blocks");
    assertEquals(0, cached.apply("\"cache_salt\": \"tenant-b\", "), "another salt: none of them");
    assertEquals(0, cached.apply(""), "no salt: none of them");
    assertEquals(96, cached.apply(""), "and unsalted blocks are shared as before");
    HttpResponse<String> empty = post("/v1/completions", body.apply("\"cache_salt\": \"\", "));
    assertEquals(400, empty.statusCode());
    assertEquals("cache_salt", JSON.readTree(empty.body()).at("/error/param").asText());
    TestDeployments.assertPoolsFull(deployment);
  }

  /**
   * vLLM's {@code continuous_usage_stats}: with {@code include_usage}, every chunk of a choice
   * carries its usage so far — the prompt, and the tokens out, never fewer than the chunk before —
   * and the last one the whole count; without {@code include_usage}, none does.
   */
  @Test
  void continuousUsageStatsPutEachChoicesUsageSoFarOnEveryChunk() throws Exception {
    String body = """
        {"model": "%s", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 6, "stream": true,
         "stream_options": {"include_usage": true, "continuous_usage_stats": true}}""".formatted(M);
    List<JsonNode> chunks = new ArrayList<>();
    for (String e : post("/v1/chat/completions", body).body().split("\n\n")) {
      if (e.startsWith("data: {")) {
        chunks.add(JSON.readTree(e.substring(6)));
      }
    }
    JsonNode total = chunks.getLast().get("usage");
    assertEquals(6, total.get("completion_tokens").asInt(), "the usage chunk at the end, as with include_usage alone");
    int before = -1;
    for (JsonNode chunk : chunks.subList(0, chunks.size() - 1)) {
      JsonNode usage = chunk.get("usage");
      assertTrue(usage != null && usage.isObject(), "every choice chunk: " + chunk);
      assertEquals(total.get("prompt_tokens").asInt(), usage.get("prompt_tokens").asInt());
      assertTrue(usage.get("completion_tokens").asInt() >= before, chunk.toString());
      before = usage.get("completion_tokens").asInt();
    }
    assertEquals(0, chunks.getFirst().at("/usage/completion_tokens").asInt(), "the role chunk: nothing out yet");
    assertEquals(6, before, "the finish chunk: all of it");
    String alone = post("/v1/chat/completions", body.replace("\"include_usage\": true, ", "")).body();
    assertTrue(!alone.contains("\"usage\""), "without include_usage, vLLM sends no usage at all: " + alone);
  }

  /** vLLM's {@code allowed_token_ids} on the mocker: every generated token is one of them, streamed or not. */
  @Test
  void allowedTokenIdsAreAllTheOutputHolds() throws Exception {
    List<Integer> allowed = List.of(1000, 1001, 2002);
    for (boolean stream : new boolean[] {false, true}) {
      HttpResponse<String> r = post("/v1/chat/completions", """
          {"model": "%s", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16, "n": 2, "stream": %s,
           "allowed_token_ids": [1000, 1001, 2002], "return_token_ids": true}""".formatted(M, stream));
      assertEquals(200, r.statusCode(), r.body());
      List<Integer> drawn = new ArrayList<>();
      for (String event : stream ? r.body().split("\n\n") : new String[] {"data: " + r.body()}) {
        if (event.startsWith("data: {")) {
          for (JsonNode choice : JSON.readTree(event.substring(6)).get("choices")) {
            choice.path("token_ids").forEach(t -> drawn.add(t.asInt()));
          }
        }
      }
      assertEquals(32, drawn.size(), r.body());
      assertTrue(allowed.containsAll(drawn), "stream " + stream + ": " + drawn);
    }
    TestDeployments.assertPoolsFull(deployment);
  }

  /**
   * vLLM's {@code bad_words} on the mocker: with two tokens allowed and one of them the text of a
   * bad word (alone and after a space), every token drawn is the other one.
   */
  @Test
  void badWordsAreNeverDrawn() throws Exception {
    int hello = JSON.readTree(post("/tokenize", "{\"prompt\": \"hello\"}").body()).at("/tokens/0").asInt();
    int world = JSON.readTree(post("/tokenize", "{\"prompt\": \"world\"}").body()).at("/tokens/0").asInt();
    HttpResponse<String> r = post("/v1/completions", """
        {"model": "%s", "prompt": "x", "max_tokens": 24, "allowed_token_ids": [%d, %d], "bad_words": ["hello"],
         "return_token_ids": true, "seed": 3}""".formatted(M, hello, world));
    assertEquals(200, r.statusCode(), r.body());
    List<Integer> drawn = new ArrayList<>();
    JSON.readTree(r.body()).at("/choices/0/token_ids").forEach(t -> drawn.add(t.asInt()));
    assertEquals(java.util.Collections.nCopies(24, world), drawn);
    HttpResponse<String> blank = post("/v1/completions", """
        {"model": "%s", "prompt": "x", "bad_words": [" "]}""".formatted(M));
    assertEquals(400, blank.statusCode());
    assertEquals("bad_words[0]", JSON.readTree(blank.body()).at("/error/param").asText());
  }

  /**
   * vLLM's {@code truncate_prompt_tokens}: a prompt longer than the 4,096-token window is served
   * on its last k tokens (the usage says k); without it the same prompt is a 400.
   */
  @Test
  void truncatePromptTokensServesAPromptLongerThanTheWindowOnItsLastTokens() throws Exception {
    String text = "word ".repeat(6000);
    HttpResponse<String> whole = post("/v1/completions", """
        {"model": "%s", "prompt": "%s", "max_tokens": 4}""".formatted(M, text));
    assertEquals(400, whole.statusCode(), whole.body());
    assertEquals("context_length_exceeded", JSON.readTree(whole.body()).at("/error/code").asText());
    HttpResponse<String> cut = post("/v1/completions", """
        {"model": "%s", "prompt": "%s", "max_tokens": 4, "truncate_prompt_tokens": 100}""".formatted(M, text));
    assertEquals(200, cut.statusCode(), cut.body());
    assertEquals(100, JSON.readTree(cut.body()).at("/usage/prompt_tokens").asInt());
    HttpResponse<String> chat = post("/v1/chat/completions", """
        {"model": "%s", "messages": [{"role": "user", "content": "%s"}], "max_tokens": 4, "truncate_prompt_tokens": -1}""".formatted(M, text));
    assertEquals(400, chat.statusCode(), "the whole window kept leaves no room for the completion: " + chat.body());
    assertEquals("context_length_exceeded", JSON.readTree(chat.body()).at("/error/code").asText());
  }

  static Stream<Arguments> badRequests() {
    String chat = "/v1/chat/completions";
    String msgs = "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]";
    return Stream.of(
        Arguments.of("malformed JSON", chat, "{\"model\": ", 400, null, "invalid_json"),
        Arguments.of("not an object", chat, "[1, 2]", 400, null, "invalid_json"),
        Arguments.of("wrong type", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"temperature\": \"hot\"}", 400, "temperature", "invalid_type"),
        Arguments.of("unknown model", chat, "{\"model\": \"gpt-4o\", " + msgs + "}", 404, "model", "model_not_found"),
        Arguments.of("missing model", chat, "{" + msgs + "}", 400, "model", "missing_required_parameter"),
        Arguments.of("empty messages", chat, "{\"model\": \"" + M + "\", \"messages\": []}", 400, "messages", "empty_array"),
        Arguments.of("bad role", chat, "{\"model\": \"" + M + "\", \"messages\": [{\"role\": \"bot\", \"content\": \"x\"}]}", 400, "messages[0].role", null),
        Arguments.of("image part", chat, "{\"model\": \"" + M + "\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": {\"url\": \"x\"}}]}]}", 400, "messages[0].content[0]", "unsupported_parameter"),
        Arguments.of("max_tokens zero", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"max_tokens\": 0}", 400, "max_tokens", "integer_below_min_value"),
        Arguments.of("max_completion_tokens negative", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"max_completion_tokens\": -3}", 400, "max_completion_tokens", "integer_below_min_value"),
        Arguments.of("prompt longer than context", "/v1/completions", "{\"model\": \"" + M + "\", \"prompt\": " + ids(5000) + "}", 400, "prompt", "context_length_exceeded"),
        Arguments.of("prompt plus max_tokens over context", "/v1/completions", "{\"model\": \"" + M + "\", \"prompt\": " + ids(4000) + ", \"max_tokens\": 200}", 400, "max_tokens", "context_length_exceeded"),
        Arguments.of("token id outside vocabulary", "/v1/completions", "{\"model\": \"" + M + "\", \"prompt\": [1, 99999999]}", 400, "prompt", null),
        Arguments.of("empty prompt", "/v1/completions", "{\"model\": \"" + M + "\", \"prompt\": \"\"}", 400, "prompt", null),
        Arguments.of("stream_options without stream", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"stream_options\": {\"include_usage\": true}}", 400, "stream_options", null),
        Arguments.of("n zero", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"n\": 0}", 400, "n", "invalid_value"),
        Arguments.of("top_p zero", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"top_p\": 0}", 400, "top_p", "invalid_value"),
        Arguments.of("penalty the engine lacks", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"presence_penalty\": 0.5}", 400, "presence_penalty", "unsupported_parameter"),
        Arguments.of("structured output", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"response_format\": {\"type\": \"json_object\"}}", 400, "response_format", "unsupported_parameter"),
        Arguments.of("echo with logprobs on the mocker", "/v1/completions", "{\"model\": \"" + M + "\", \"prompt\": \"x\", \"echo\": true, \"logprobs\": 1}", 400, "logprobs", "unsupported_parameter"),
        Arguments.of("forced tool call on the mocker", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"tool_choice\": \"required\", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}", 400, "tool_choice", "unsupported_parameter"),
        Arguments.of("tool_choice naming no offered tool", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"g\"}}, \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}", 400, "tool_choice", null),
        Arguments.of("beam search on the mocker", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"use_beam_search\": true}", 400, "use_beam_search", "unsupported_parameter"),
        Arguments.of("length_penalty without beam search", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"length_penalty\": 0.5}", 400, "length_penalty", null),
        Arguments.of("logit_bias on the mocker", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"logit_bias\": {\"42\": 5}}", 400, "logit_bias", "unsupported_parameter"),
        Arguments.of("logit_bias key not a token id", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"logit_bias\": {\"hello\": 5}}", 400, "logit_bias", null),
        Arguments.of("template raises", chat, "{\"model\": \"" + M + "\", \"messages\": [{\"role\": \"assistant\"}]}", 400, "messages[0].content", null),
        Arguments.of("pinned worker unknown", chat, "{\"model\": \"" + M + "\", " + msgs + ", \"tandem\": {\"worker_id\": \"nobody\"}}", 400, "tandem.worker_id", null));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badRequests")
  void badInputGetsOpenAiErrorAndLosesNothing(String name, String path, String body, int status, String param, String code) throws Exception {
    HttpResponse<String> r = post(path, body);
    assertEquals(status, r.statusCode(), r.body());
    JsonNode error = JSON.readTree(r.body()).get("error");
    assertNotNull(error, r.body());
    assertTrue(error.get("message").asText().length() > 10, r.body());
    assertEquals("invalid_request_error", error.get("type").asText());
    assertEquals(param, error.get("param").isNull() ? null : error.get("param").asText(), r.body());
    if (code != null) {
      assertEquals(code, error.get("code").asText(), r.body());
    }
    TestDeployments.assertPoolsFull(deployment);
    // The server keeps serving on the same client.
    assertEquals(200, post("/v1/completions", "{\"model\": \"" + M + "\", \"prompt\": \"ok\", \"max_tokens\": 1}").statusCode());
  }

  @Test
  void echoReturnsThePromptBeforeTheCompletion() throws Exception {
    JsonNode plain = JSON.readTree(post("/v1/completions", """
        {"model": "%s", "prompt": "Once upon a time", "max_tokens": 3, "seed": 1}""".formatted(M)).body());
    JsonNode echoed = JSON.readTree(post("/v1/completions", """
        {"model": "%s", "prompt": "Once upon a time", "max_tokens": 3, "seed": 1, "echo": true}""".formatted(M)).body());
    assertEquals("Once upon a time" + plain.at("/choices/0/text").asText(), echoed.at("/choices/0/text").asText());
    assertEquals(plain.at("/usage/completion_tokens").asInt(), echoed.at("/usage/completion_tokens").asInt());
    String streamed = post("/v1/completions", """
        {"model": "%s", "prompt": "Once upon a time", "max_tokens": 3, "seed": 1, "echo": true, "stream": true}""".formatted(M)).body();
    StringBuilder text = new StringBuilder();
    for (String e : streamed.split("\n\n")) {
      if (e.startsWith("data: {")) {
        text.append(JSON.readTree(e.substring(6)).at("/choices/0/text").asText(""));
      }
    }
    assertEquals(echoed.at("/choices/0/text").asText(), text.toString());
  }

  @Test
  void unknownEndpointAndWrongMethod() throws Exception {
    HttpResponse<String> notFound = get("/v1/nothing");
    assertEquals(404, notFound.statusCode());
    assertEquals("unknown_url", JSON.readTree(notFound.body()).at("/error/code").asText());
    HttpResponse<String> wrong = get("/v1/chat/completions");
    assertEquals(405, wrong.statusCode());
    assertEquals("POST", wrong.headers().firstValue("allow").orElseThrow());
    assertEquals("method_not_allowed", JSON.readTree(wrong.body()).at("/error/code").asText());
  }

  @Test
  void bodyOverTheLimitIs413() throws Exception {
    try (Socket s = new Socket("127.0.0.1", deployment.port())) {
      OutputStream out = s.getOutputStream();
      out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Content-Length: " + (4 << 20) + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      String response = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(response.startsWith("HTTP/1.1 413"), response);
      assertTrue(response.contains("\"code\":\"request_too_large\""), response);
    }
    assertEquals(200, get("/live").statusCode());
  }

  @Test
  void tokenizeAndDetokenizeUseVllmShapes() throws Exception {
    JsonNode t = JSON.readTree(post("/tokenize", "{\"prompt\": \"Hello, my dog is cute\"}").body());
    assertEquals(6, t.get("count").asInt());
    assertEquals(List.of(9707, 11, 847, 5562, 374, 18838), JSON.convertValue(t.get("tokens"), List.class));
    assertEquals(4096, t.get("max_model_len").asInt());
    JsonNode d = JSON.readTree(post("/detokenize", "{\"tokens\": [9707, 11, 847, 5562, 374, 18838]}").body());
    assertEquals("Hello, my dog is cute", d.get("prompt").asText());
    JsonNode chat = JSON.readTree(post("/tokenize", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}").body());
    // <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n
    assertEquals(List.of(151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198), JSON.convertValue(chat.get("tokens"), List.class));
    assertEquals(400, post("/detokenize", "{\"tokens\": [-1]}").statusCode());
  }

  @Test
  void healthLiveAndMetrics() throws Exception {
    JsonNode health = JSON.readTree(get("/health").body());
    assertEquals("healthy", health.get("status").asText());
    assertEquals(2, health.get("workers").size());
    assertEquals(200, get("/live").statusCode());
    post("/v1/completions", "{\"model\": \"" + M + "\", \"prompt\": \"metrics\", \"max_tokens\": 2}");
    String metrics = get("/metrics").body();
    for (String name : List.of(
        "tandem_frontend_requests_total{endpoint=\"completions\",status=\"200\"}",
        "tandem_frontend_time_to_first_token_seconds_bucket",
        "tandem_frontend_inter_token_latency_seconds_count",
        "tandem_frontend_output_tokens_total",
        "tandem_frontend_inflight_requests",
        "tandem_worker_kv_blocks_capacity{role=\"agg\",worker=\"worker-0\"}",
        "tandem_worker_queued_prefill_tokens{role=\"agg\",worker=\"worker-0\"}",
        "tandem_frontend_waiting_requests",
        "tandem_router_open_reservations",
        "tandem_worker_engine_step_seconds_count{worker=\"worker-1\"}")) {
      assertTrue(metrics.contains(name), "missing " + name);
    }
    // The planner reads the uncached prompt lengths from the scrape as a length mix: this request's among them.
    var snapshot = dev.tandem.planner.live.FrontendSnapshot.of(List.of(dev.tandem.planner.live.PrometheusText.parse(metrics)));
    var mix = dev.tandem.planner.LengthMix.between(new java.util.TreeMap<>(), snapshot.uncachedPromptBuckets());
    assertTrue(mix.count() >= 1 && mix.tokens(0) < 64, mix.toString()); // a few-token prompt: the first buckets
  }
}
