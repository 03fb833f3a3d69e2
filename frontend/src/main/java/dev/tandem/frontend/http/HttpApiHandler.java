package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.text.ChatTemplate;
import dev.tandem.frontend.openai.ClassifySpec;
import dev.tandem.frontend.openai.EmbeddingSpec;
import dev.tandem.frontend.openai.GenerationSpec;
import dev.tandem.frontend.openai.RequestParser;
import dev.tandem.frontend.openai.ResponsesRequest;
import dev.tandem.frontend.openai.ResponseJson;
import dev.tandem.frontend.openai.ScoreSpec;
import dev.tandem.router.NoWorkerAvailableException;
import dev.tandem.router.RequestRouter;
import dev.tandem.router.WorkerStatus;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP API of DESIGN.md on one connection: OpenAI chat and text completions, models,
 * tokenize/detokenize (vLLM's shapes), health, liveness and Prometheus metrics. One request at a
 * time per connection: reading pauses while a generation streams.
 *
 * <p>Threading: runs on the connection's event loop.
 */
final class HttpApiHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
  private static final Logger log = LoggerFactory.getLogger(HttpApiHandler.class);
  /** OpenAI's "retrieve model", {@code GET /v1/models/{model}}: a name may hold slashes ({@code Qwen/Qwen3-0.6B}). */
  private static final String MODEL_PREFIX = "/v1/models/";
  private static final String MODEL_ROUTE = MODEL_PREFIX + "{model}";
  /** vLLM's runtime LoRA endpoints, with its bodies and answers. */
  private static final String LOAD_LORA = "/v1/load_lora_adapter";
  private static final String UNLOAD_LORA = "/v1/unload_lora_adapter";

  private static final Map<String, HttpMethod> ROUTES =
      Map.ofEntries(
          Map.entry("/v1/chat/completions", HttpMethod.POST),
          Map.entry("/v1/completions", HttpMethod.POST),
          Map.entry("/v1/responses", HttpMethod.POST),
          Map.entry("/v1/embeddings", HttpMethod.POST),
          Map.entry("/classify", HttpMethod.POST),
          Map.entry("/score", HttpMethod.POST),
          Map.entry("/v1/score", HttpMethod.POST),
          Map.entry("/rerank", HttpMethod.POST),
          Map.entry("/v1/rerank", HttpMethod.POST),
          Map.entry("/v2/rerank", HttpMethod.POST),
          Map.entry("/v1/models", HttpMethod.GET),
          Map.entry(MODEL_ROUTE, HttpMethod.GET),
          Map.entry("/tokenize", HttpMethod.POST),
          Map.entry("/detokenize", HttpMethod.POST),
          Map.entry("/health", HttpMethod.GET),
          Map.entry("/live", HttpMethod.GET),
          Map.entry("/metrics", HttpMethod.GET),
          Map.entry(LOAD_LORA, HttpMethod.POST),
          Map.entry(UNLOAD_LORA, HttpMethod.POST));

  /** vLLM's score and rerank paths (rerank's {@code /v2} is Cohere's), answered from pooled outputs (embeddings or a cross-encoder's logits). */
  private static final java.util.Set<String> SCORES = java.util.Set.of("/score", "/v1/score", "/rerank", "/v1/rerank", "/v2/rerank");
  /** What runs on the workers: counted against --max-inflight-requests, prepared off the event loop. */
  private static final java.util.Set<String> GENERATIONS = java.util.stream.Stream.concat(
      java.util.stream.Stream.of("/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings", "/classify"),
      SCORES.stream())
      .collect(java.util.stream.Collectors.toUnmodifiableSet());

  private final ServedModel model;
  private final RequestParser parser;
  private final RequestRouter router;
  private final FrontendMetrics metrics;
  private final long createdSeconds;
  private Runnable current; // tells the request in flight that its client went away

  private final java.time.Duration workerWait;
  private final Admission admission;
  private final java.util.concurrent.Executor preparation;
  private final int migrationLimit;
  /** Bodies up to this size are prepared on the event loop (a millisecond or so), larger ones on the pool. */
  static final int SMALL_BODY_BYTES = 64 << 10;

  HttpApiHandler(ServedModel model, RequestRouter router, FrontendMetrics metrics, long createdSeconds, java.time.Duration workerWait) {
    this(model, router, metrics, createdSeconds, workerWait, Admission.open());
  }

  HttpApiHandler(ServedModel model, RequestRouter router, FrontendMetrics metrics, long createdSeconds, java.time.Duration workerWait,
      Admission admission) {
    this(model, router, metrics, createdSeconds, workerWait, admission, PromptPreparation.DIRECT);
  }

  HttpApiHandler(ServedModel model, RequestRouter router, FrontendMetrics metrics, long createdSeconds, java.time.Duration workerWait,
      Admission admission, java.util.concurrent.Executor preparation) {
    this(model, router, metrics, createdSeconds, workerWait, admission, preparation, FrontendServer.DEFAULT_MIGRATION_LIMIT);
  }

  HttpApiHandler(ServedModel model, RequestRouter router, FrontendMetrics metrics, long createdSeconds, java.time.Duration workerWait,
      Admission admission, java.util.concurrent.Executor preparation, int migrationLimit) {
    this.migrationLimit = migrationLimit;
    this.preparation = preparation;
    this.workerWait = workerWait;
    this.admission = admission;
    this.model = model;
    this.parser = new RequestParser(model);
    this.router = router;
    this.metrics = metrics;
    this.createdSeconds = createdSeconds;
  }

  @Override
  protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
    long start = System.nanoTime();
    boolean keepAlive = HttpUtil.isKeepAlive(request) && request.decoderResult().isSuccess(); // after a malformed request, close
    String path = new QueryStringDecoder(request.uri()).path();
    String route = path.startsWith(MODEL_PREFIX) && path.length() > MODEL_PREFIX.length() ? MODEL_ROUTE : path;
    // The metrics' endpoint label: one per route (a model's name would make a label per name asked for).
    String endpoint = route == MODEL_ROUTE ? "models_retrieve"
        : path.startsWith("/v1/") || path.startsWith("/v2/") ? path.substring(4).replace('/', '_') : path.replaceFirst("^/", "");
    try {
      if (!request.decoderResult().isSuccess()) {
        throw ApiException.invalid(null, "Malformed HTTP request: " + request.decoderResult().cause());
      }
      HttpMethod allowed = ROUTES.get(route);
      if (allowed == null && path.startsWith("/v1/responses/")) { // retrieve, delete, input_items, cancel
        throw new ApiException(404, "No response can be found here (" + request.method() + " " + path + "): this server stores no "
            + "responses ('store' is always false).", "invalid_request_error", null, "not_found");
      }
      if (allowed == null) {
        throw new ApiException(404, "Invalid URL (" + request.method() + " " + path + ").", "invalid_request_error", null, "unknown_url");
      }
      if (!allowed.equals(request.method())) {
        throw new ApiException(405, "Method " + request.method() + " is not allowed on " + path + "; use " + allowed + ".", "invalid_request_error", null, "method_not_allowed");
      }
      boolean open = path.equals("/live") || path.equals("/health") || (path.equals("/metrics") && !admission.keysOnMetrics());
      if (!open && !admission.keys().admits(request)) {
        throw new ApiException(401, "Incorrect or missing API key: send it as 'Authorization: Bearer <key>'.",
            "invalid_request_error", null, "invalid_api_key");
      }
      if (admission.maxInflightRequests() > 0 && GENERATIONS.contains(path)
          && metrics.inflight() >= admission.maxInflightRequests()) {
        throw new ApiException(429, "Too many requests in flight (" + admission.maxInflightRequests()
            + ", --max-inflight-requests); retry shortly.", "requests", null, "rate_limit_exceeded");
      }
      if (GENERATIONS.contains(path)) {
        prepare(ctx, path, endpoint, ByteBufUtil.getBytes(request.content()), keepAlive, start);
        return;
      }
      switch (route) {
        case "/v1/models" -> reply(ctx, endpoint, 200, models(), keepAlive);
        case MODEL_ROUTE -> reply(ctx, endpoint, 200, model(path.substring(MODEL_PREFIX.length())), keepAlive);
        case "/tokenize" -> reply(ctx, endpoint, 200, tokenize(RequestParser.parseBody(ByteBufUtil.getBytes(request.content()))), keepAlive);
        case "/detokenize" -> reply(ctx, endpoint, 200, detokenize(RequestParser.parseBody(ByteBufUtil.getBytes(request.content()))), keepAlive);
        case "/health" -> health(ctx, endpoint, keepAlive);
        case LOAD_LORA, UNLOAD_LORA -> updateLora(ctx, path, endpoint, RequestParser.parseBody(ByteBufUtil.getBytes(request.content())), keepAlive);
        case "/live" -> {
          ObjectNode live = ResponseJson.JSON.createObjectNode().put("status", "live");
          reply(ctx, endpoint, 200, live, keepAlive);
        }
        case "/metrics" -> {
          HttpResponses.text(ctx, 200, metrics.scrape(), "text/plain; version=0.0.4; charset=utf-8", keepAlive)
              .addListener(closeUnlessKeepAlive(keepAlive));
          metrics.requestFinished(endpoint, 200);
        }
        default -> throw new IllegalStateException("unrouted " + path);
      }
    } catch (RuntimeException e) {
      fail(ctx, request.method() + " " + path, path, endpoint, e, keepAlive);
    }
  }

  /** Answers a failed request: its OpenAI error, or a 500 (and the connection closed) for a bug. */
  private void fail(ChannelHandlerContext ctx, String what, String path, String endpoint, RuntimeException error, boolean keepAlive) {
    if (error instanceof ApiException e) {
      // The header each status needs beside its OpenAI-shaped body.
      java.util.Map.Entry<CharSequence, String> header = switch (e.status()) {
        case 401 -> java.util.Map.entry(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
        case 405 -> java.util.Map.entry(HttpHeaderNames.ALLOW, ROUTES.get(path).name());
        case 429, 503 -> java.util.Map.entry(HttpHeaderNames.RETRY_AFTER, "1");
        default -> null;
      };
      HttpResponses.error(ctx, e, keepAlive, header).addListener(closeUnlessKeepAlive(keepAlive));
      metrics.requestFinished(ROUTES.containsKey(path) ? endpoint : "unknown", e.status());
      return;
    }
    log.error("request {} failed", what, error);
    ApiException api = new ApiException(500, "Internal error: " + error.getMessage(), "server_error", null, null);
    HttpResponses.error(ctx, api, false).addListener(ChannelFutureListener.CLOSE);
    metrics.requestFinished(endpoint, 500);
  }

  /**
   * Parses, renders and tokenizes a generation request on the preparation pool (reading from the
   * connection paused meanwhile), then starts it back on the connection's event loop.
   */
  private void prepare(ChannelHandlerContext ctx, String path, String endpoint, byte[] body, boolean keepAlive, long start) {
    ctx.channel().config().setAutoRead(false);
    // A small body is quicker to prepare here than to hand over: only large ones go to the pool,
    // so that a few huge prompts never queue ahead of ordinary requests.
    java.util.concurrent.Executor where = body.length <= SMALL_BODY_BYTES ? PromptPreparation.DIRECT : preparation;
    try {
      where.execute(() -> {
        Runnable prepared = null; // starts the request on the event loop
        RuntimeException failure = null;
        try {
          prepared = parsed(ctx, path, endpoint, body, keepAlive, start);
        } catch (RuntimeException e) {
          failure = e;
        }
        Runnable run = prepared;
        RuntimeException error = failure;
        Runnable resume = () -> {
          if (!ctx.channel().isActive()) {
            return; // the client went away while its prompt was prepared
          }
          try {
            if (error != null) {
              throw error;
            }
            run.run();
          } catch (RuntimeException e) {
            ctx.channel().config().setAutoRead(true);
            fail(ctx, "POST " + path, path, endpoint, e, keepAlive);
          }
        };
        if (ctx.executor().inEventLoop()) {
          resume.run();
        } else {
          ctx.executor().execute(resume);
        }
      });
    } catch (RuntimeException e) {
      ctx.channel().config().setAutoRead(true);
      throw e;
    }
  }

  /**
   * Parses and tokenizes a request's body; returns what starts it.
   *
   * @throws ApiException for a request that cannot run
   */
  private Runnable parsed(ChannelHandlerContext ctx, String path, String endpoint, byte[] body, boolean keepAlive, long start) {
    long created = System.currentTimeMillis() / 1000; // a pooling response's
    if (path.equals("/v1/embeddings")) { // many inputs, each checked against the window as it is tokenized
      EmbeddingSpec spec = parser.parseEmbeddings(RequestParser.parseBody(body));
      var reply = new EmbeddingRun.Reply(endpoint, "embd-",
          (id, pooled, tokens) -> ResponseJson.embeddings(id, created, spec.model(), pooled, spec.base64(), tokens));
      return () -> embed(ctx, spec, reply, keepAlive, start);
    }
    if (path.equals("/classify")) { // a sequence classifier's label logits, as probabilities
      ClassifySpec spec = parser.parseClassify(RequestParser.parseBody(body));
      var reply = new EmbeddingRun.Reply(endpoint, "classify-", (id, logits, tokens) ->
          ResponseJson.classifications(spec, id, created, spec.inputs().model(), model.labels(), logits, tokens));
      return () -> embed(ctx, spec.inputs(), reply, keepAlive, start);
    }
    if (SCORES.contains(path)) { // the texts' embeddings and their cosines, or a cross-encoder's logit a pair
      ObjectNode json = RequestParser.parseBody(body);
      ScoreSpec spec = path.endsWith("/score") ? parser.parseScore(json) : parser.parseRerank(json);
      var reply = new EmbeddingRun.Reply(endpoint, spec.rerank() ? "rerank-" : "score-",
          (id, pooled, tokens) -> ResponseJson.scores(spec, id, created, spec.inputs().model(), pooled, tokens));
      return () -> embed(ctx, spec.inputs(), reply, keepAlive, start);
    }
    if (body.length > SMALL_BODY_BYTES) {
      parser.refuseIfPromptCannotFit(body); // before anything is built from it
    }
    ObjectNode json = RequestParser.parseBody(body);
    if (path.equals("/v1/responses")) {
      ResponsesRequest responses = ResponsesRequest.parse(json);
      GenerationSpec spec = parseChatAs(responses);
      return () -> generate(ctx, spec, responses, keepAlive, start);
    }
    GenerationSpec spec = path.equals("/v1/chat/completions") ? parser.parseChat(json) : parser.parseCompletion(json);
    return () -> generate(ctx, spec, null, keepAlive, start);
  }

  /** A Responses API request through the chat parser, its errors naming the Responses fields. */
  private GenerationSpec parseChatAs(ResponsesRequest responses) {
    try {
      return parser.parseChat(responses.chat());
    } catch (ApiException e) {
      throw ResponsesRequest.renamed(e);
    }
  }

  private void generate(ChannelHandlerContext ctx, GenerationSpec spec, ResponsesRequest responses, boolean keepAlive, long start) {
    GenerationRun run = new GenerationRun(ctx, spec, model, router, metrics, keepAlive, start, workerWait, migrationLimit, responses,
        done(ctx));
    run(ctx, run::start, run::clientGone);
  }

  private void embed(ChannelHandlerContext ctx, EmbeddingSpec spec, EmbeddingRun.Reply reply, boolean keepAlive, long start) {
    EmbeddingRun run = new EmbeddingRun(ctx, spec, reply, router, metrics, keepAlive, start, workerWait, migrationLimit, done(ctx));
    run(ctx, run::start, run::clientGone);
  }

  /**
   * Starts a request's run with reading from its connection paused until the run is done ({@link
   * #done}); {@code clientGone} is what the run is told if the connection closes first.
   */
  private void run(ChannelHandlerContext ctx, Runnable start, Runnable clientGone) {
    ctx.channel().config().setAutoRead(false);
    current = clientGone;
    try {
      start.run();
    } catch (ApiException e) {
      current = null;
      ctx.channel().config().setAutoRead(true);
      throw e;
    }
  }

  /** What a run calls when it is over: the connection reads its next request. */
  private Runnable done(ChannelHandlerContext ctx) {
    return () -> {
      current = null;
      ctx.channel().config().setAutoRead(true);
    };
  }

  private void reply(ChannelHandlerContext ctx, String endpoint, int status, ObjectNode body, boolean keepAlive) {
    HttpResponses.json(ctx, status, body, keepAlive).addListener(closeUnlessKeepAlive(keepAlive));
    metrics.requestFinished(endpoint, status);
  }

  private static ChannelFutureListener closeUnlessKeepAlive(boolean keepAlive) {
    return keepAlive ? f -> {} : ChannelFutureListener.CLOSE;
  }

  private ObjectNode models() {
    ObjectNode root = ResponseJson.JSON.createObjectNode();
    root.put("object", "list");
    ArrayNode data = root.putArray("data");
    data.add(describe(model.name()));
    model.loraAdapters().forEach(a -> data.add(describe(a)));
    return root;
  }

  /**
   * The served model, or one of its LoRA adapters (as vLLM lists them: {@code parent} the base
   * model), as OpenAI describes a model; a 404 naming {@code id} when it is neither.
   */
  private ObjectNode model(String id) {
    if (!model.serves(id)) {
      throw new ApiException(404, "The model `" + id + "` does not exist. This server serves " + model.servedNames() + ".",
          "invalid_request_error", "model", "model_not_found");
    }
    return describe(id);
  }

  /** A name this server serves, as OpenAI describes a model. */
  private ObjectNode describe(String id) {
    ObjectNode m = ResponseJson.JSON.createObjectNode();
    m.put("id", id);
    m.put("object", "model");
    m.put("created", createdSeconds);
    m.put("owned_by", "tandem");
    m.put("root", id);
    if (!id.equals(model.name())) {
      m.put("parent", model.name());
    }
    m.put("max_model_len", model.maxContextLength());
    return m;
  }

  private void health(ChannelHandlerContext ctx, String endpoint, boolean keepAlive) {
    ObjectNode root = ResponseJson.JSON.createObjectNode();
    List<WorkerStatus> all = router.workers();
    long reachable = all.stream().filter(WorkerStatus::reachable).count();
    // Whether anything can generate: a reachable decode or aggregated worker that is not draining.
    long serving = all.stream().filter(w -> w.reachable() && !w.load().draining()
        && w.description().role() != dev.tandem.common.WorkerRole.PREFILL).count();
    List<WorkerStatus> silent = all.stream().filter(WorkerStatus::missingKvEvents).toList();
    boolean someDown = reachable < all.size();
    root.put("status", serving == 0 ? "unhealthy" : silent.isEmpty() && !someDown ? "healthy" : "degraded");
    root.put("model", model.name());
    root.put("router_mode", router.mode());
    if (!silent.isEmpty() || someDown) {
      ArrayNode degraded = root.putArray("degraded_workers");
      for (WorkerStatus w : all) {
        if (!w.reachable()) {
          degraded.addObject().put("id", w.description().workerId().value()).put("reason", "not reachable (its load stream is down)");
        }
      }
      for (WorkerStatus w : silent) {
        degraded.addObject()
            .put("id", w.description().workerId().value())
            .put("reason", "sent prompts that must have stored KV blocks but published no KV events within "
                + router.missingEventsWindow().toSeconds() + " s; routed approximately until its events resume");
      }
    }
    root.put("discovery", router.discovery());
    ArrayNode workers = root.putArray("workers");
    for (WorkerStatus w : all) {
      ObjectNode o = workers.addObject();
      o.put("id", w.description().workerId().value());
      o.put("role", w.description().role().cliName());
      o.put("address", w.address());
      o.put("reachable", w.reachable());
      o.put("draining", w.load().draining());
      o.put("active_requests", w.load().activeRequests());
      o.put("kv_blocks_used", w.load().kvBlocksUsed());
      o.put("kv_blocks_total", w.load().kvBlocksTotal());
      if (!w.description().kvCacheDtype().isEmpty()) {
        o.put("kv_cache_dtype", w.description().kvCacheDtype());
      }
      if (!w.description().kvKeyRotation().isEmpty()) {
        o.put("kv_key_rotation", w.description().kvKeyRotation());
      }
      if (!w.description().weightQuantization().isEmpty()) {
        o.put("weight_quantization", w.description().weightQuantization());
      }
      if (!w.load().loraAdapters().isEmpty()) {
        w.load().loraAdapters().forEach(o.putArray("lora_adapters")::add);
      }
    }
    var refused = router.refusedWorkers();
    if (!refused.isEmpty()) {
      ArrayNode r = root.putArray("refused_workers");
      refused.forEach((address, why) -> r.addObject().put("address", address).put("reason", why));
    }
    reply(ctx, endpoint, serving > 0 ? 200 : 503, root, keepAlive);
  }

  /**
   * Loads ({@code {"lora_name", "lora_path"}}) or unloads ({@code {"lora_name"}}) a LoRA adapter on
   * every worker, answering as vLLM does: 200 with a line of text, or an error. The workers' answers
   * are awaited off the event loop, reading from the connection paused meanwhile.
   */
  private void updateLora(ChannelHandlerContext ctx, String path, String endpoint, ObjectNode body, boolean keepAlive) {
    if (!admission.loraUpdates()) {
      throw new ApiException(404, "Loading and unloading LoRA adapters while serving is off: start the frontend (and `tandem worker`s) with "
          + "--allow-runtime-lora-updating.", "invalid_request_error", null, "not_found");
    }
    boolean load = path.equals(LOAD_LORA);
    String name = nonBlankString(body, "lora_name");
    String loraPath = load ? nonBlankString(body, "lora_path") : null;
    if (name.equals(model.name())) {
      throw ApiException.invalid("lora_name", "'" + name + "' is the served model's name; a LoRA adapter needs a name of its own.");
    }
    ctx.channel().config().setAutoRead(false);
    Thread.ofVirtual().name("lora-update-" + name).start(() -> {
      RuntimeException failure = null;
      String done = null;
      try {
        if (load) {
          router.loadLoraAdapter(name, loraPath);
          done = "Success: LoRA adapter '" + name + "' added successfully.";
        } else {
          router.unloadLoraAdapter(name);
          done = "Success: LoRA adapter '" + name + "' removed successfully.";
        }
      } catch (NoWorkerAvailableException e) {
        failure = new ApiException(503, e.getMessage(), "service_unavailable", null, null);
      } catch (java.util.NoSuchElementException e) {
        failure = new ApiException(404, e.getMessage(), "invalid_request_error", "lora_name", "not_found");
      } catch (IllegalArgumentException e) {
        failure = ApiException.invalid(load ? "lora_path" : "lora_name", e.getMessage());
      } catch (RuntimeException e) {
        failure = e;
      }
      String answer = done;
      RuntimeException error = failure;
      ctx.executor().execute(() -> {
        ctx.channel().config().setAutoRead(true);
        if (error != null) {
          fail(ctx, "POST " + path, path, endpoint, error, keepAlive);
        } else {
          HttpResponses.text(ctx, 200, answer, "text/plain; charset=utf-8", keepAlive).addListener(closeUnlessKeepAlive(keepAlive));
          metrics.requestFinished(endpoint, 200);
        }
      });
    });
  }

  private static String nonBlankString(ObjectNode body, String field) {
    JsonNode v = body.get(field);
    if (v == null || !v.isTextual() || v.asText().isBlank()) {
      throw ApiException.invalid(field, "'" + field + "' must be a non-empty string.");
    }
    return v.asText();
  }

  private ObjectNode tokenize(ObjectNode body) {
    JsonNode m = body.get("model");
    if (m != null && !m.isNull() && !model.serves(m.asText())) {
      throw new ApiException(404, "The model `" + m.asText() + "` does not exist.", "invalid_request_error", "model", "model_not_found");
    }
    int[] ids;
    if (body.has("messages")) {
      ObjectNode chat = body.deepCopy();
      chat.put("model", model.name());
      chat.remove("max_tokens");
      chat.remove("max_completion_tokens");
      chat.put("max_tokens", 1);
      chat.remove("stream");
      ids = tokenizeChat(chat);
    } else if (body.has("prompt")) {
      JsonNode p = body.get("prompt");
      if (!p.isTextual()) {
        throw ApiException.invalid("prompt", "Invalid type for 'prompt': expected a string.", "invalid_type");
      }
      JsonNode add = body.get("add_special_tokens");
      ids = model.tokenizer().encode(p.asText(), add == null || add.asBoolean(true));
    } else {
      throw ApiException.invalid(null, "Provide either 'prompt' or 'messages'.", "missing_required_parameter");
    }
    ObjectNode root = ResponseJson.JSON.createObjectNode();
    root.put("count", ids.length);
    root.put("max_model_len", model.maxContextLength());
    ArrayNode tokens = root.putArray("tokens");
    for (int id : ids) {
      tokens.add(id);
    }
    if (body.path("return_token_strs").asBoolean(false)) {
      ArrayNode strs = root.putArray("token_strs");
      for (int id : ids) {
        strs.add(model.tokenizer().decode(new int[] {id}, false));
      }
    } else {
      root.putNull("token_strs");
    }
    return root;
  }

  private int[] tokenizeChat(ObjectNode chat) {
    // Same validation and rendering as a chat completion, without the context-window check.
    try {
      return parser.parseConversation(chat).prompts().getFirst();
    } catch (ApiException e) {
      if ("context_length_exceeded".equals(e.code())) {
        throw ApiException.invalid("messages", e.getMessage(), e.code());
      }
      throw e;
    } catch (ChatTemplate.TemplateFailure e) {
      throw ApiException.invalid("messages", e.getMessage());
    }
  }

  private ObjectNode detokenize(ObjectNode body) {
    JsonNode t = body.get("tokens");
    if (t == null || !t.isArray()) {
      throw ApiException.invalid("tokens", "'tokens' must be an array of token ids.", "invalid_type");
    }
    int[] ids = new int[t.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode v = t.get(i);
      if (!v.isIntegralNumber() || v.asLong() < 0 || v.asLong() >= model.vocabSize()) {
        throw ApiException.invalid("tokens", "Token id " + v + " at position " + i + " is not in the vocabulary.");
      }
      ids[i] = v.asInt();
    }
    ObjectNode root = ResponseJson.JSON.createObjectNode();
    root.put("prompt", model.tokenizer().decode(ids, false));
    return root;
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    if (current != null) {
      current.run();
      current = null;
    }
    super.channelInactive(ctx);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    log.debug("connection {} failed", ctx.channel().remoteAddress(), cause);
    if (current != null) {
      current.run();
      current = null;
    }
    ctx.close();
  }
}
