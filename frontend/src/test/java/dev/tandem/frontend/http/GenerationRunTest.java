package dev.tandem.frontend.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.WorkerId;
import dev.tandem.engine.ModelFiles;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.text.ChatTemplate;
import dev.tandem.frontend.text.TextTokenizer;
import dev.tandem.router.Generation;
import dev.tandem.router.NoWorkerAvailableException;
import dev.tandem.router.RequestRouter;
import dev.tandem.router.Route;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.TokenListener;
import dev.tandem.common.WorkerRole;
import dev.tandem.router.WorkerStatus;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * A chat request through the HTTP handler on an {@link EmbeddedChannel} (no socket), against a
 * scripted router: SSE framing, stop strings cancelling the worker, worker failures as OpenAI
 * errors, a client going away, and every route either started or released.
 */
class GenerationRunTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TextTokenizer TOKENIZER = TextTokenizer.fromJson(ModelFiles.bundledQwen3().tokenizerJson(), "qwen3");
  private static final ServedModel MODEL =
      new ServedModel("m", 4096, 151_936, "test", Set.of("structured_outputs"), new int[] {151645}, TOKENIZER,
          ChatTemplate.fromTokenizerConfig(ModelFiles.bundledQwen3().tokenizerConfigJson(), "qwen3"));

  @AfterAll
  static void close() {
    TOKENIZER.close();
  }

  /** A router whose every route runs {@code script} against the request and the listener when started. */
  static final class ScriptedRouter implements RequestRouter {
    final java.util.function.BiConsumer<GenerationRequest, TokenListener> script;
    final List<String> cancels = new ArrayList<>();
    final List<GenerationRequest> routed = new ArrayList<>();
    int released;
    boolean noWorker;
    List<WorkerStatus> workers = List.of();

    ScriptedRouter(Consumer<TokenListener> script) {
      this((request, listener) -> script.accept(listener));
    }

    ScriptedRouter(java.util.function.BiConsumer<GenerationRequest, TokenListener> script) {
      this.script = script;
    }

    @Override
    public Route route(GenerationRequest request, String pinnedWorker) {
      if (noWorker) {
        throw new NoWorkerAvailableException("no worker is registered", true);
      }
      if (pinnedWorker != null) {
        throw new IllegalArgumentException("no reachable worker has id '" + pinnedWorker + "'");
      }
      routed.add(request);
      return new Route() {
        @Override public WorkerId worker() { return new WorkerId("w0"); }
        @Override public int predictedOverlapBlocks() { return 0; }
        @Override public double predictedCost() { return Double.NaN; }
        @Override public String costName() { return ""; }
        @Override public SplitPolicy.Decision decision() { return null; }
        @Override public Generation start(TokenListener listener) {
          script.accept(request, listener);
          return reason -> cancels.add(reason);
        }
        @Override public void release() { released++; }
      };
    }

    @Override public int blockSize() { return 16; }
    @Override public String mode() { return "scripted"; }
    @Override public List<WorkerStatus> workers() { return workers; }
    @Override public Duration missingEventsWindow() { return null; }
  }

  private static int[] tokens(String text) {
    return TOKENIZER.encode(text, false);
  }

  static TokenChunk chunk(int[] tokens, FinishReason finish) {
    return new TokenChunk(tokens, null, finish, finish == null ? 0 : 12, 0,
        finish == null ? new TokenChunk.Origin("w0", 100, "", "", 0, 0, 0) : null);
  }

  private static EmbeddedChannel channel(RequestRouter router) {
    return channel(router, new FrontendMetrics(), Duration.ZERO);
  }

  private static EmbeddedChannel channel(RequestRouter router, FrontendMetrics metrics, Duration workerWait) {
    return new EmbeddedChannel(new HttpApiHandler(MODEL, router, metrics, 0, workerWait));
  }

  static void post(EmbeddedChannel ch, String body) {
    post(ch, "/v1/chat/completions", body);
  }

  static void post(EmbeddedChannel ch, String path, String body) {
    ByteBuf content = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
    var request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, path, content);
    request.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
    request.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
    ch.writeInbound(request);
    ch.runPendingTasks();
  }

  /** Everything written back: the response head's status and the body bytes as text. */
  record Written(int status, String body) {}

  static Written drain(EmbeddedChannel ch) {
    int status = -1;
    StringBuilder body = new StringBuilder();
    Object o;
    while ((o = ch.readOutbound()) != null) {
      if (o instanceof HttpResponse r) {
        status = r.status().code();
      }
      if (o instanceof HttpContent c) {
        body.append(c.content().toString(StandardCharsets.UTF_8));
        c.release();
      } else if (o instanceof FullHttpResponse f) {
        body.append(f.content().toString(StandardCharsets.UTF_8));
        f.release();
      }
    }
    return new Written(status, body.toString());
  }

  static List<JsonNode> events(String sse) throws Exception {
    List<JsonNode> out = new ArrayList<>();
    for (String frame : sse.split("\n\n")) {
      assertTrue(frame.startsWith("data: "), "an SSE data frame: " + frame);
      String data = frame.substring(6);
      if (!data.equals("[DONE]")) {
        out.add(JSON.readTree(data));
      }
    }
    return out;
  }

  private static final String STREAM =
      "{\"model\":\"m\",\"stream\":true,\"max_tokens\":8,\"temperature\":0,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";

  @Test
  void aStreamedChatIsFramedAsOpenAiSseEndingInDone() throws Exception {
    var router = new ScriptedRouter(l -> {
      l.onChunk(chunk(tokens("Hello"), null));
      l.onChunk(chunk(tokens(" world"), FinishReason.LENGTH));
      l.onCompleted();
    });
    EmbeddedChannel ch = channel(router);
    post(ch, STREAM + "}");
    Written w = drain(ch);
    assertEquals(200, w.status());
    assertTrue(w.body().endsWith("data: [DONE]\n\n"), w.body());
    List<JsonNode> events = events(w.body());
    assertEquals("assistant", events.getFirst().at("/choices/0/delta/role").asText());
    StringBuilder text = new StringBuilder();
    events.forEach(e -> text.append(e.at("/choices/0/delta/content").asText("")));
    assertEquals("Hello world", text.toString());
    assertEquals("length", events.getLast().at("/choices/0/finish_reason").asText());
    assertEquals(1, router.routed.size());
    assertEquals(8, router.routed.getFirst().stop().maxTokens());
    assertEquals(0f, router.routed.getFirst().sampling().temperature());
    assertTrue(router.cancels.isEmpty(), "a finished generation is not cancelled");
  }

  private static final String TOOLS = ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
      + "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}]";

  /** The Qwen3 model's reply: reasoning, a sentence, and a tool call, cut into awkward pieces. */
  private static ScriptedRouter thinkingCaller() {
    return new ScriptedRouter(l -> {
      l.onChunk(chunk(tokens("<think>\nThe user wants"), null));
      l.onChunk(chunk(tokens(" weather.\n</th"), null));
      l.onChunk(chunk(tokens("ink>\n\nChecking. <tool_"), null));
      l.onChunk(chunk(tokens("call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"), FinishReason.STOP));
      l.onCompleted();
    });
  }

  @Test
  void reasoningAndToolCallsAreParsedOutOfAStreamedChat() throws Exception {
    EmbeddedChannel ch = channel(thinkingCaller());
    post(ch, STREAM + TOOLS + "}");
    List<JsonNode> events = events(drain(ch).body());
    StringBuilder reasoning = new StringBuilder();
    StringBuilder content = new StringBuilder();
    List<JsonNode> calls = new ArrayList<>();
    for (JsonNode e : events) {
      reasoning.append(e.at("/choices/0/delta/reasoning_content").asText(""));
      content.append(e.at("/choices/0/delta/content").asText(""));
      e.at("/choices/0/delta/tool_calls").forEach(calls::add);
    }
    assertEquals("The user wants weather.\n", reasoning.toString());
    assertEquals("Checking. ", content.toString());
    assertEquals(2, calls.size(), "id and name first, then the arguments");
    assertEquals("get_weather", calls.get(0).at("/function/name").asText());
    assertTrue(calls.get(0).get("id").asText().startsWith("call_"));
    assertEquals("", calls.get(0).at("/function/arguments").asText());
    assertEquals(0, calls.get(1).get("index").asInt());
    assertEquals("{\"city\":\"Paris\"}", calls.get(1).at("/function/arguments").asText());
    assertEquals("tool_calls", events.getLast().at("/choices/0/finish_reason").asText());
  }

  @Test
  void aNonStreamedChatCarriesReasoningContentAndToolCalls() throws Exception {
    EmbeddedChannel ch = channel(thinkingCaller());
    post(ch, "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}]" + TOOLS + "}");
    JsonNode body = JSON.readTree(drain(ch).body());
    JsonNode message = body.at("/choices/0/message");
    assertEquals("The user wants weather.\n", message.get("reasoning_content").asText());
    assertEquals("Checking. ", message.get("content").asText());
    assertEquals("get_weather", message.at("/tool_calls/0/function/name").asText());
    assertEquals("function", message.at("/tool_calls/0/type").asText());
    assertEquals("tool_calls", body.at("/choices/0/finish_reason").asText());
    int all = tokens("<think>\nThe user wants").length + tokens(" weather.\n</th").length + tokens("ink>\n\nChecking. <tool_").length
        + tokens("call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>").length;
    assertEquals(all, body.at("/usage/completion_tokens").asInt(), "usage counts every token, reasoning and calls included");
  }

  /** Two calls in a row, as a model makes parallel calls (the second would follow the first). */
  private static ScriptedRouter twoCalls() {
    return new ScriptedRouter(l -> {
      l.onChunk(chunk(tokens("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"), null));
      l.onChunk(chunk(tokens("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>"), FinishReason.STOP));
      l.onCompleted();
    });
  }

  /**
   * {@code parallel_tool_calls: false}: the first complete call ends the output — the generation
   * is cancelled there, and a second call the model goes on to write never reaches the client.
   */
  /**
   * vLLM's {@code include_reasoning: false}: the reasoning is still parsed out of the output (the
   * content and calls are what they would be) and not returned, streamed or not; vLLM's {@code
   * request_id} ends the response's id, while the generations on the workers keep ids of their own.
   */
  @Test
  void withoutIncludeReasoningTheReasoningIsParsedOutAndNotReturned() throws Exception {
    EmbeddedChannel ch = channel(thinkingCaller());
    post(ch, "{\"model\":\"m\",\"max_tokens\":64,\"include_reasoning\":false,\"request_id\":\"trace-7\","
        + "\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}]" + TOOLS + "}");
    JsonNode body = JSON.readTree(drain(ch).body());
    JsonNode message = body.at("/choices/0/message");
    assertFalse(message.has("reasoning_content") && !message.get("reasoning_content").isNull(), message.toString());
    assertEquals("Checking. ", message.get("content").asText());
    assertEquals("get_weather", message.at("/tool_calls/0/function/name").asText());
    assertEquals("chatcmpl-trace-7", body.get("id").asText());

    ScriptedRouter router = thinkingCaller();
    ch = channel(router);
    post(ch, STREAM + TOOLS + ",\"include_reasoning\":false,\"request_id\":\"trace-7\"}");
    List<JsonNode> events = events(drain(ch).body());
    assertTrue(events.stream().noneMatch(e -> e.at("/choices/0/delta").has("reasoning_content")), events.toString());
    assertEquals("Checking. ", events.stream().map(e -> e.at("/choices/0/delta/content").asText("")).reduce("", String::concat));
    assertTrue(events.stream().allMatch(e -> e.get("id").asText().equals("chatcmpl-trace-7")));
    assertFalse(router.routed.getFirst().requestId().contains("trace-7"), "the workers' id is the frontend's own");
  }

  @Test
  void withParallelToolCallsOffTheFirstCallEndsTheOutput() throws Exception {
    String chat = "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}]" + TOOLS;
    ScriptedRouter parallel = twoCalls();
    EmbeddedChannel ch = channel(parallel);
    post(ch, chat + "}");
    assertEquals(2, JSON.readTree(drain(ch).body()).at("/choices/0/message/tool_calls").size(), "parallel calls by default");

    for (boolean stream : new boolean[] {false, true}) {
      ScriptedRouter one = twoCalls();
      ch = channel(one);
      post(ch, chat + ",\"parallel_tool_calls\":false,\"stream\":" + stream + "}");
      String body = drain(ch).body();
      List<JsonNode> calls = new ArrayList<>();
      String finish;
      if (stream) {
        List<JsonNode> events = events(body);
        events.forEach(e -> e.at("/choices/0/delta/tool_calls").forEach(c -> { if (c.has("id")) calls.add(c); }));
        finish = events.getLast().at("/choices/0/finish_reason").asText();
      } else {
        JsonNode choice = JSON.readTree(body).at("/choices/0");
        choice.at("/message/tool_calls").forEach(calls::add);
        finish = choice.get("finish_reason").asText();
      }
      assertEquals(1, calls.size(), body);
      assertEquals("tool_calls", finish);
      assertEquals(1, one.cancels.size(), "the generation stops at the first call");
    }
  }

  /**
   * The Responses API through the same run: the reply's reasoning, text and call become three
   * output items in order, and usage counts the reasoning's tokens.
   */
  @Test
  void aResponsesRequestGetsItsOutputAsItems() throws Exception {
    EmbeddedChannel ch = channel(thinkingCaller());
    post(ch, "/v1/responses", "{\"model\":\"m\",\"input\":\"weather?\",\"max_output_tokens\":64,"
        + "\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}]}");
    Written w = drain(ch);
    assertEquals(200, w.status(), w.body());
    JsonNode response = JSON.readTree(w.body());
    assertEquals("completed", response.get("status").asText());
    JsonNode output = response.get("output");
    assertEquals(List.of("reasoning", "message", "function_call"),
        List.of(output.get(0).get("type").asText(), output.get(1).get("type").asText(), output.get(2).get("type").asText()));
    assertEquals("The user wants weather.\n", output.get(0).at("/content/0/text").asText());
    assertEquals("Checking. ", output.get(1).at("/content/0/text").asText());
    assertEquals("{\"city\":\"Paris\"}", output.get(2).get("arguments").asText());
    assertEquals(tokens("The user wants weather.\n").length, response.at("/usage/output_tokens_details/reasoning_tokens").asInt());
  }

  @Test
  void withThinkingOffOrToolsNotOfferedTheTextIsLeftAlone() throws Exception {
    EmbeddedChannel ch = channel(thinkingCaller());
    post(ch, "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],"
        + "\"chat_template_kwargs\":{\"enable_thinking\":false},\"tool_choice\":\"none\"" + TOOLS + "}");
    JsonNode message = JSON.readTree(drain(ch).body()).at("/choices/0/message");
    assertTrue(message.get("content").asText().startsWith("<think>"), message.toString());
    assertTrue(message.get("content").asText().contains("<tool_call>"));
    assertFalse(message.has("tool_calls"));
  }

  @Test
  void aForcedToolChoiceSendsTheWorkerAConstraintInTheModelsFormat() throws Exception {
    var router = new ScriptedRouter(l -> {
      l.onChunk(chunk(tokens("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\"}}\n</tool_call>"), FinishReason.STOP));
      l.onCompleted();
    });
    EmbeddedChannel ch = channel(router);
    post(ch, "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
        + "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}" + TOOLS + "}");
    JsonNode body = JSON.readTree(drain(ch).body());
    assertEquals("tool_calls", body.at("/choices/0/finish_reason").asText(), body.toString());
    var constraint = router.routed.getFirst().structuredOutput();
    assertEquals("<tool_call>\n", constraint.prefix());
    assertEquals("\n</tool_call>", constraint.suffix());
    JsonNode schema = JSON.readTree(constraint.spec());
    assertEquals("get_weather", schema.at("/properties/name/const").asText());
    assertEquals("city", schema.at("/properties/arguments/required/0").asText());
  }

  @Test
  void promptsArePreparedOffTheEventLoopAndAFullQueueIs503() throws Exception {
    var router = new ScriptedRouter(l -> {
      l.onChunk(chunk(tokens("ok"), FinishReason.STOP));
      l.onCompleted();
    });
    List<Runnable> deferred = new ArrayList<>();
    EmbeddedChannel ch = new EmbeddedChannel(new HttpApiHandler(MODEL, router, new FrontendMetrics(), 0, Duration.ZERO,
        Admission.open(), deferred::add));
    post(ch, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertEquals(0, deferred.size(), "a small body is prepared on the event loop");
    assertEquals(200, drain(ch).status());
    router.routed.clear();
    String large = " ".repeat(HttpApiHandler.SMALL_BODY_BYTES + 100); // large in bytes, few tokens (runs of 128 spaces)
    post(ch, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"" + large + "\"}]}");
    assertEquals(1, deferred.size(), "a large body waits for the preparation pool");
    assertEquals(-1, drain(ch).status(), "nothing parsed, routed or answered on the event loop");
    assertTrue(router.routed.isEmpty());
    assertFalse(ch.config().isAutoRead(), "the connection is not read meanwhile");
    deferred.getFirst().run();
    ch.runPendingTasks();
    assertEquals(200, drain(ch).status());
    assertEquals(1, router.routed.size());

    try (PromptPreparation pool = new PromptPreparation(1, 1)) {
      java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
      pool.execute(() -> {
        try {
          hold.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      pool.execute(() -> { });
      ApiException busy = org.junit.jupiter.api.Assertions.assertThrows(ApiException.class, () -> pool.execute(() -> { }));
      assertEquals(503, busy.status());
      hold.countDown();
    }
  }

  @Test
  void aPromptThatCannotFitIsRefusedBeforeItIsRenderedOrTokenized() throws Exception {
    EmbeddedChannel ch = channel(new ScriptedRouter(l -> { }));
    String huge = "x".repeat(4096 * 128 + 1000); // more characters than 4,096 tokens of at most 128 can hold
    post(ch, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + huge + "\"}]}");
    Written w = drain(ch);
    assertEquals(400, w.status());
    JsonNode error = JSON.readTree(w.body()).get("error");
    assertEquals("context_length_exceeded", error.get("code").asText());
    assertTrue(error.get("message").asText().contains("at least 4103 input tokens"), error.toString());
  }

  /** The first worker fails after "Hello"; whoever takes the request next finishes it. */
  private static ScriptedRouter failingOnce() {
    List<Integer> calls = new ArrayList<>();
    return new ScriptedRouter(l -> {
      calls.add(1);
      if (calls.size() == 1) {
        l.onChunk(chunk(tokens("Hello"), null));
        l.onError(new GenerationException(GenerationException.Kind.UNAVAILABLE, "UNAVAILABLE", "worker went away", null));
      } else {
        l.onChunk(chunk(tokens(" world"), null));
        l.onChunk(chunk(tokens("!"), FinishReason.STOP));
        l.onCompleted();
      }
    });
  }

  @Test
  void aChoiceWhoseWorkerFailsMidStreamContinuesOnAnotherAsOneStream() throws Exception {
    ScriptedRouter router = failingOnce();
    FrontendMetrics metrics = new FrontendMetrics();
    EmbeddedChannel ch = new EmbeddedChannel(new HttpApiHandler(MODEL, router, metrics, 0, Duration.ZERO));
    post(ch, STREAM + ",\"stream_options\":{\"include_usage\":true}}");
    Written w = drain(ch);
    assertTrue(w.body().endsWith("data: [DONE]\n\n"), w.body());
    StringBuilder text = new StringBuilder();
    List<JsonNode> events = events(w.body());
    events.forEach(e -> text.append(e.at("/choices/0/delta/content").asText("")));
    assertEquals("Hello world!", text.toString());
    assertEquals(2, router.routed.size());
    int[] first = router.routed.get(0).promptTokens();
    int[] second = router.routed.get(1).promptTokens();
    int hello = tokens("Hello").length;
    assertEquals(first.length + hello, second.length, "the new prompt is the old one and the tokens so far");
    assertEquals(8 - hello, router.routed.get(1).stop().maxTokens(), "the rest of the budget");
    assertEquals(hello, router.routed.get(1).resumedOutputTokens(), "the worker counts the tokens so far as output");
    assertEquals(first.length, events.getLast().at("/usage/prompt_tokens").asInt(), "usage counts the client's prompt, once");
    assertEquals(hello + tokens(" world").length + tokens("!").length, events.getLast().at("/usage/completion_tokens").asInt());
    assertEquals(1, metrics.migrations());
  }

  @Test
  void migrationHonoursItsLimitAndResumesAConstraint() throws Exception {
    ScriptedRouter off = failingOnce();
    EmbeddedChannel ch = new EmbeddedChannel(new HttpApiHandler(MODEL, off, new FrontendMetrics(), 0, Duration.ZERO, Admission.open(),
        PromptPreparation.DIRECT, 0));
    post(ch, STREAM + "}");
    assertTrue(drain(ch).body().contains("worker went away"), "--migration-limit 0: the stream fails");
    assertEquals(1, off.routed.size());

    ScriptedRouter constrained = failingOnce();
    ch = channel(constrained);
    post(ch, STREAM.replace("\"max_tokens\":8", "\"max_tokens\":40") + ",\"response_format\":{\"type\":\"json_object\"}}");
    drain(ch);
    assertEquals(2, constrained.routed.size(), "a constrained stream moves too");
    assertEquals(constrained.routed.get(0).structuredOutput(), constrained.routed.get(1).structuredOutput(), "the same constraint");
    assertEquals(tokens("Hello").length, constrained.routed.get(1).resumedOutputTokens(),
        "its grammar resumes after the tokens so far");
    assertEquals(0, constrained.routed.get(0).resumedOutputTokens());
  }

  /**
   * A toy model for beam search: after token x it gives x+1 (-0.1), x+2 (-0.7), end of sequence
   * (-1.2) and x+3 (-2.0), as a worker reports a one-token generation's alternatives.
   */
  private static void toyModel(GenerationRequest r, TokenListener l) {
    int x = r.promptTokens()[r.promptTokens().length - 1];
    int[] ids = {x + 1, x + 2, 151645, x + 3};
    float[] lps = {-0.1f, -0.7f, -1.2f, -2.0f};
    var lp = new dev.tandem.common.TokenLogprob(lps[0], ids, lps, 1);
    l.onChunk(new TokenChunk(new int[] {ids[0]}, new dev.tandem.common.TokenLogprob[] {lp}, FinishReason.LENGTH,
        r.promptTokens().length, 0, new TokenChunk.Origin("w0", 100, "", "", 0, 0, 0)));
    l.onCompleted();
  }

  private static final ServedModel SCORING = new ServedModel("m", 4096, 151_936, "test", Set.of("logprobs"), new int[] {151645},
      TOKENIZER, ChatTemplate.fromTokenizerConfig(ModelFiles.bundledQwen3().tokenizerConfigJson(), "qwen3"));

  /**
   * vLLM's beam search, width 2, two tokens, from prompt [100, 200] on {@link #toyModel}. Step 1:
   * [201] -0.1 and [202] -0.7 live, [end] -1.2 ends. Step 2: [201,202] -0.2 and [201,203] -0.8
   * live ([202,203] -0.8 ties and came later); [201,end] -1.3 and [202,end] -1.9 end. Ranked by
   * log-probability ÷ length: [201,202] -0.05, [201,203] -0.2, then the ended ones (-0.43 and
   * below). Each step is a one-token generation per beam asking for 2 × 2 alternatives.
   */
  @Test
  void aBeamSearchRunsOneTokenStepsAndReturnsTheBestBeamsAsChoices() throws Exception {
    var router = new ScriptedRouter(GenerationRunTest::toyModel);
    EmbeddedChannel ch = new EmbeddedChannel(new HttpApiHandler(SCORING, router, new FrontendMetrics(), 0, Duration.ZERO));
    post(ch, "/v1/completions", "{\"model\":\"m\",\"prompt\":[100,200],\"max_tokens\":2,\"n\":2,\"use_beam_search\":true,"
        + "\"return_token_ids\":true,\"logprobs\":1}");
    Written w = drain(ch);
    assertEquals(200, w.status(), w.body());
    JsonNode body = JSON.readTree(w.body());
    assertEquals("[201,202]", body.at("/choices/0/token_ids").toString());
    assertEquals("[201,203]", body.at("/choices/1/token_ids").toString());
    assertEquals("length", body.at("/choices/0/finish_reason").asText());
    assertEquals(-0.7, body.at("/choices/1/logprobs/token_logprobs/1").asDouble(), 1e-6, "203 after 201: its own log-probability");
    assertEquals(1, body.at("/choices/1/logprobs/top_logprobs/1").size(), "the one alternative asked for");
    assertEquals(2, body.at("/usage/prompt_tokens").asInt());
    assertEquals(4, body.at("/usage/completion_tokens").asInt());
    assertEquals(List.of("[100, 200]", "[100, 200, 201]", "[100, 200, 202]"),
        router.routed.stream().map(r -> java.util.Arrays.toString(r.promptTokens())).toList());
    for (GenerationRequest r : router.routed) {
      assertEquals(1, r.stop().maxTokens());
      assertEquals(4, r.sampling().logprobs(), "twice the width");
    }
    assertEquals(0, router.released, "every route started");

    // Two prompts: a search each, their beams as choices 0-1 and 2-3.
    router.routed.clear();
    post(ch, "/v1/completions", "{\"model\":\"m\",\"prompt\":[[100,200],[300,400]],\"max_tokens\":2,\"n\":2,"
        + "\"use_beam_search\":true,\"return_token_ids\":true}");
    JsonNode two = JSON.readTree(drain(ch).body());
    assertEquals(List.of("[201,202]", "[201,203]", "[401,402]", "[401,403]"),
        List.of(0, 1, 2, 3).stream().map(i -> two.at("/choices/" + i + "/token_ids").toString()).toList(), two.toString());
    assertEquals(4, two.at("/usage/prompt_tokens").asInt(), "each prompt once");
    assertEquals(6, router.routed.size(), "a first step of one beam and a second of two, for each prompt");

    // Streamed: the same choices, each in one piece once the search is over.
    router.routed.clear();
    post(ch, "/v1/completions", "{\"model\":\"m\",\"prompt\":[100,200],\"max_tokens\":2,\"n\":2,\"use_beam_search\":true,"
        + "\"return_token_ids\":true,\"stream\":true}");
    List<JsonNode> events = events(drain(ch).body());
    assertEquals("[201,202]", events.stream().filter(e -> e.at("/choices/0/index").asInt() == 0 && e.at("/choices/0/token_ids").size() > 0)
        .findFirst().orElseThrow().at("/choices/0/token_ids").toString());
  }

  /** A beam's step whose worker fails is tried again on another, and the search goes on. */
  @Test
  void aBeamsFailedStepIsTriedAgain() throws Exception {
    List<Integer> calls = new ArrayList<>();
    var router = new ScriptedRouter((r, l) -> {
      calls.add(1);
      if (calls.size() == 2) {
        l.onError(new GenerationException(GenerationException.Kind.UNAVAILABLE, "UNAVAILABLE", "worker went away", null));
      } else {
        toyModel(r, l);
      }
    });
    FrontendMetrics metrics = new FrontendMetrics();
    EmbeddedChannel ch = new EmbeddedChannel(new HttpApiHandler(SCORING, router, metrics, 0, Duration.ZERO));
    post(ch, "/v1/completions", "{\"model\":\"m\",\"prompt\":[100,200],\"max_tokens\":2,\"n\":2,\"use_beam_search\":true,"
        + "\"return_token_ids\":true}");
    JsonNode body = JSON.readTree(drain(ch).body());
    assertEquals("[201,202]", body.at("/choices/0/token_ids").toString(), body.toString());
    assertEquals(4, router.routed.size(), "the failed step once more");
    assertEquals(1, metrics.migrations());
  }

  @Test
  void aStopStringEndsTheChoiceAndCancelsTheWorker() throws Exception {
    var router = new ScriptedRouter(l -> {
      l.onChunk(chunk(tokens("one two"), null));
      l.onChunk(chunk(tokens(" three four"), null));
    });
    EmbeddedChannel ch = channel(router);
    post(ch, STREAM + ",\"stop\":[\" three\"]}");
    Written w = drain(ch);
    StringBuilder text = new StringBuilder();
    events(w.body()).forEach(e -> text.append(e.at("/choices/0/delta/content").asText("")));
    assertEquals("one two", text.toString());
    assertEquals(List.of("stop string matched"), router.cancels);
    assertTrue(w.body().contains("\"finish_reason\":\"stop\""));
  }

  @Test
  void workerFailuresBecomeOpenAiErrorsWithTheirStatus() throws Exception {
    var unavailable = new ScriptedRouter(l -> l.onError(
        new GenerationException(GenerationException.Kind.UNAVAILABLE, "UNAVAILABLE", "engine stopped", null)));
    EmbeddedChannel ch = channel(unavailable);
    post(ch, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    Written w = drain(ch);
    assertEquals(503, w.status());
    JsonNode error = JSON.readTree(w.body()).get("error");
    assertEquals("service_unavailable", error.get("type").asText());
    assertTrue(error.get("message").asText().contains("engine stopped"), error.toString());

    var invalid = new ScriptedRouter(l -> l.onError(
        new GenerationException(GenerationException.Kind.INVALID_REQUEST, "INVALID_ARGUMENT", "prompt too long", null)));
    ch = channel(invalid);
    post(ch, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    w = drain(ch);
    assertEquals(400, w.status());
    assertEquals("prompt too long", JSON.readTree(w.body()).at("/error/message").asText());
  }

  @Test
  void aStreamThatFailsAfterItsHeadersEndsWithAnErrorEventAndNoDone() throws Exception {
    var router = new ScriptedRouter(l -> {
      l.onChunk(chunk(tokens("partial"), null));
      l.onError(new GenerationException(GenerationException.Kind.UNAVAILABLE, "UNAVAILABLE", "worker died", null));
    });
    EmbeddedChannel ch = channel(router);
    post(ch, STREAM + "}");
    Written w = drain(ch);
    assertEquals(200, w.status());
    List<JsonNode> events = events(w.body());
    assertTrue(events.getLast().has("error"), w.body());
    assertFalse(w.body().contains("[DONE]"), "a failed stream must not look complete: " + w.body());
    assertTrue(ch.isActive(), "its response ended properly and the kept-alive connection serves the next request");
    post(ch, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"again\"}],\"max_tokens\":1}");
    Written next = drain(ch); // the scripted worker fails this one too, without streaming: a 503 in OpenAI's shape
    assertEquals(503, next.status(), "the same connection answers the next request");
    assertTrue(next.body().contains("\"error\""), next.body());
  }

  private static WorkerStatus worker(String id, WorkerRole role, boolean reachable) {
    return worker(id, role, reachable, "", "");
  }

  private static WorkerStatus worker(String id, WorkerRole role, boolean reachable, String kvCacheDtype, String keyRotation) {
    var d = new dev.tandem.common.WorkerDescription(new WorkerId(id), role, 16, "m", 4096, 151_936, 1024, kvCacheDtype, keyRotation, 64, "mocker",
        List.of(), new int[] {151645}, "", "", null, "h", "", 2, 64, 512, List.of(), "", "", List.of());
    return new WorkerStatus(d, id + ":1", reachable, dev.tandem.common.WorkerLoadReport.empty(new WorkerId(id)), false);
  }

  private static JsonNode health(ScriptedRouter router, int status) throws Exception {
    EmbeddedChannel ch = channel(router);
    ch.writeInbound(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/health"));
    ch.runPendingTasks();
    Written w = drain(ch);
    assertEquals(status, w.status(), w.body());
    return JSON.readTree(w.body());
  }

  @Test
  void healthIsDegradedWhenSomeWorkersAreDownAndUnhealthyWhenNoneCanGenerate() throws Exception {
    var router = new ScriptedRouter(l -> {});
    router.workers = List.of(worker("d0", WorkerRole.DECODE, true), worker("d1", WorkerRole.DECODE, false));
    JsonNode h = health(router, 200);
    assertEquals("degraded", h.get("status").asText());
    assertEquals("d1", h.at("/degraded_workers/0/id").asText());
    router.workers = List.of(worker("p0", WorkerRole.PREFILL, true), worker("d1", WorkerRole.DECODE, false));
    assertEquals("unhealthy", health(router, 503).get("status").asText(), "a prefill worker alone generates nothing");
    router.workers = List.of(worker("d0", WorkerRole.DECODE, true, "bf16", "longrope-short"), worker("m0", WorkerRole.DECODE, true));
    JsonNode healthy = health(router, 200);
    assertEquals("healthy", healthy.get("status").asText());
    assertEquals("bf16", healthy.at("/workers/0/kv_cache_dtype").asText(), "each worker's KV cache dtype");
    assertTrue(healthy.at("/workers/1/kv_cache_dtype").isMissingNode(), "none for an engine with no real KV");
    assertEquals("longrope-short", healthy.at("/workers/0/kv_key_rotation").asText(), "the LongRoPE factor set its keys were rotated with");
    assertTrue(healthy.at("/workers/1/kv_key_rotation").isMissingNode(), "none for a model with one rotation");
  }

  @Test
  void aRequestPinnedToAnUnreachableWorkerIs503AndToAnUnknownOne400() throws Exception {
    var router = new ScriptedRouter(l -> {});
    router.workers = List.of(worker("d1", WorkerRole.DECODE, false));
    EmbeddedChannel ch = channel(router);
    post(ch, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tandem\":{\"worker_id\":\"d1\"}}");
    assertEquals(503, drain(ch).status());
    post(ch, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tandem\":{\"worker_id\":\"nobody\"}}");
    assertEquals(400, drain(ch).status());
  }

  @Test
  void noWorkerIs503AndAClientGoingAwayCancelsTheGeneration() throws Exception {
    var none = new ScriptedRouter(l -> {});
    none.noWorker = true;
    EmbeddedChannel ch = channel(none);
    post(ch, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertEquals(503, drain(ch).status());

    var hanging = new ScriptedRouter(l -> l.onChunk(chunk(tokens("thinking"), null)));
    ch = channel(hanging);
    post(ch, STREAM + "}");
    assertFalse(drain(ch).body().contains("[DONE]"));
    ch.close();
    ch.runPendingTasks();
    assertEquals(List.of("client disconnected"), hanging.cancels);
  }

  /** Scale from zero: with --worker-wait-s the request waits for a worker instead of failing. */
  @Test
  void withAWorkerWaitARequestWaitsForTheFirstWorkerThenStreams() throws Exception {
    // The stream's end comes after its chunks have been handled: EmbeddedChannel runs queued tasks
    // inside a write when called from a scheduled task, which a real event loop never does.
    java.util.concurrent.atomic.AtomicReference<TokenListener> started = new java.util.concurrent.atomic.AtomicReference<>();
    var router = new ScriptedRouter(l -> {
      started.set(l);
      l.onChunk(chunk(tokens("Hi"), null));
      l.onChunk(chunk(tokens("!"), FinishReason.STOP));
    });
    router.noWorker = true;
    FrontendMetrics metrics = new FrontendMetrics();
    EmbeddedChannel ch = channel(router, metrics, Duration.ofSeconds(30));
    post(ch, STREAM + "}");
    assertEquals(-1, drain(ch).status(), "nothing written while no worker serves");
    assertEquals(1, metrics.waiting());
    ch.advanceTimeBy(300, java.util.concurrent.TimeUnit.MILLISECONDS);
    ch.runScheduledPendingTasks();
    assertEquals(-1, drain(ch).status(), "still waiting");
    router.noWorker = false; // a worker comes up
    ch.advanceTimeBy(200, java.util.concurrent.TimeUnit.MILLISECONDS);
    ch.runScheduledPendingTasks();
    ch.runPendingTasks();
    started.get().onCompleted();
    ch.runPendingTasks();
    Written w = drain(ch);
    assertEquals(200, w.status(), w.body());
    assertTrue(w.body().contains("[DONE]") && !w.body().contains("\"error\""), w.body());
    assertEquals(0, metrics.waiting());
    assertEquals(1, router.routed.size());
  }

  @Test
  void aWorkerWaitThatRunsOutIs503AndAClientLeavingStopsTheWait() throws Exception {
    var router = new ScriptedRouter(l -> {});
    router.noWorker = true;
    FrontendMetrics metrics = new FrontendMetrics();
    EmbeddedChannel ch = channel(router, metrics, Duration.ofMillis(250));
    post(ch, STREAM + "}");
    for (int i = 0; i < 5; i++) {
      ch.advanceTimeBy(100, java.util.concurrent.TimeUnit.MILLISECONDS);
      Thread.sleep(60); // the wait's deadline is wall-clock time
      ch.runScheduledPendingTasks();
    }
    assertEquals(503, drain(ch).status());
    assertEquals(0, metrics.waiting());

    EmbeddedChannel gone = channel(router, metrics, Duration.ofSeconds(30));
    post(gone, STREAM + "}");
    assertEquals(1, metrics.waiting());
    gone.close();
    gone.runPendingTasks();
    assertEquals(0, metrics.waiting());
  }

  @Test
  void aNonStreamedResponseCarriesUsageAndTheTextOfEveryChoice() throws Exception {
    var router = new ScriptedRouter(l -> {
      l.onChunk(chunk(tokens("Hi"), FinishReason.STOP));
      l.onCompleted();
    });
    EmbeddedChannel ch = channel(router);
    post(ch, "{\"model\":\"m\",\"n\":2,\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    Written w = drain(ch);
    assertEquals(200, w.status());
    JsonNode body = JSON.readTree(w.body());
    assertEquals(2, body.get("choices").size());
    assertEquals("Hi", body.at("/choices/1/message/content").asText());
    assertEquals(2, body.at("/usage/completion_tokens").asInt(), "one token per choice");
    assertEquals(List.of("chatcmpl", "chatcmpl"), router.routed.stream().map(r -> r.requestId().substring(0, 8)).toList());
  }
}
