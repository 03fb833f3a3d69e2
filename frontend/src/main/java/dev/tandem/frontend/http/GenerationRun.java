package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.TokenLogprob;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.openai.ContentChunks;
import dev.tandem.frontend.openai.GenerationSpec;
import dev.tandem.frontend.openai.ResponseJson;
import dev.tandem.router.RequestRouter;
import dev.tandem.router.Route;
import dev.tandem.router.TokenListener;
import io.netty.channel.ChannelHandlerContext;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * One chat or text completion request in flight (or a Responses API one, a chat written back as
 * {@link ResponsesOutput}): a generation per choice ({@link ChoiceStream}) on the workers the
 * router picks — or, for vLLM's beam search, the searches of a {@link BeamRun}, the beams found
 * then written back as the choices — written back as SSE
 * chunks ({@link SseWriter}) or one JSON body, timed by {@link RunTiming}; worker failures become
 * HTTP errors through {@link GenerationErrors}.
 *
 * <p>Threading: every method runs on the channel's event loop; worker callbacks are posted there,
 * so the state below needs no locks.
 */
final class GenerationRun {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(GenerationRun.class);
  private final ChannelHandlerContext ctx;
  private final GenerationSpec spec;
  private final RequestRouter router;
  private final FrontendMetrics metrics;
  private final boolean keepAlive;
  private final Runnable onDone;
  private final String id; // the response's
  private final String runId; // its generations' on the workers: unique, whatever request_id the client gave
  private final long created = System.currentTimeMillis() / 1000;
  private ContentChunks contentChunks; // made on the first content event
  private final List<ChoiceStream> choices = new ArrayList<>();
  private final SseWriter sse;
  private final ResponsesOutput responses; // null unless the request came through /v1/responses
  private final ServedModel model;
  private final RunTiming timing;
  private final int migrationLimit;
  private final int maxContextLength;
  private boolean done;
  private int finished;
  private final RunRouting routing;
  private BeamRun beams; // vLLM's beam search; null when sampled

  GenerationRun(
      ChannelHandlerContext ctx,
      GenerationSpec spec,
      ServedModel model,
      RequestRouter router,
      FrontendMetrics metrics,
      boolean keepAlive,
      long startNanos,
      java.time.Duration workerWait,
      int migrationLimit,
      dev.tandem.frontend.openai.ResponsesRequest responsesRequest,
      Runnable onDone) {
    this.routing = new RunRouting(ctx, router, metrics, workerWait, spec.pinnedWorker());
    this.model = model;
    this.migrationLimit = migrationLimit;
    this.maxContextLength = model.maxContextLength();
    this.ctx = ctx;
    this.spec = spec;
    this.router = router;
    this.metrics = metrics;
    this.keepAlive = keepAlive;
    this.onDone = onDone;
    this.sse = new SseWriter(ctx, keepAlive, spec.includeUsage());
    this.responses = responsesRequest == null ? null : new ResponsesOutput(responsesRequest.echo(), spec, sse);
    String random = UUID.randomUUID().toString().replace("-", "");
    String prefix = spec.kind() == GenerationSpec.Kind.CHAT ? "chatcmpl-" : "cmpl-";
    this.id = responses != null ? responses.id() : prefix + (spec.output().requestId() != null ? spec.output().requestId() : random);
    this.runId = prefix + random;
    this.timing = new RunTiming(metrics, startNanos);
    for (int p = 0; p < spec.prompts().size(); p++) {
      for (int j = 0; j < spec.n(); j++) {
        choices.add(new ChoiceStream(p * spec.n() + j, spec.prompts().get(p), model.tokenizer(), spec));
      }
    }
  }

  boolean isDone() {
    return done;
  }

  /**
   * Routes and starts every choice (or every beam search's first step).
   *
   * @throws ApiException if no worker can take the request (nothing is left running then)
   */
  void start() {
    metrics.inflightChange(1);
    if (spec.lora() != null) {
      metrics.loraRequest(spec.lora());
    }
    if (spec.beam() == null) {
      attempt(true);
      return;
    }
    beams = new BeamRun(this, spec, endTokens(), router, metrics, ctx.executor(), runId, migrationLimit);
    beams.start();
  }

  /** The tokens that end a beam: the request's stop token ids, and end-of-sequence unless it ignores it. */
  private int[] endTokens() {
    int[] stops = spec.stop().stopTokenIds();
    if (spec.stop().ignoreEos()) {
      return stops;
    }
    int[] eos = model.eosTokenIds();
    int[] ends = Arrays.copyOf(eos, eos.length + stops.length);
    System.arraycopy(stops, 0, ends, eos.length, stops.length);
    return ends;
  }

  /** Routes every choice ({@link #routeAll}: all or none, waiting for a worker where allowed), then starts them. */
  private void attempt(boolean first) {
    if (done) {
      return; // the client went away while waiting
    }
    List<Route> routes = routeAll(choices.stream().map(this::request).toList(), () -> attempt(false), first);
    if (routes == null) {
      return;
    }
    begin();
    timing.dispatched(System.nanoTime());
    for (int i = 0; i < choices.size(); i++) {
      ChoiceStream c = choices.get(i);
      Route route = routes.get(i);
      c.predictedOverlapBlocks = route.predictedOverlapBlocks();
      c.predictedCost = route.predictedCost();
      c.costName = route.costName();
      c.splitDecision = route.decision();
      c.call = route.start(listener(c, c.attempt)); // releases the route's reservation itself if it cannot start
    }
  }

  /**
   * Routes every request first ({@link RunRouting#routeAll}: all or none, waiting for a worker where
   * allowed, {@code retry} then run again); a failure is thrown the first time, sent to the client later.
   *
   * @return the routes, in the requests' order; null when it waits or failed
   */
  List<Route> routeAll(List<GenerationRequest> requests, Runnable retry, boolean first) {
    try {
      return routing.routeAll(requests, retry);
    } catch (ApiException e) {
      if (first) {
        metrics.inflightChange(-1);
        done = true;
        throw e;
      }
      fail(e);
      return null;
    }
  }

  /** What a response starts with once its output is coming: headers and role chunks of a stream, an echoed prompt or message. */
  private void begin() {
    if (spec.stream()) {
      sse.sendHeaders();
      if (responses != null) {
        responses.begin();
        sse.flush();
      } else if (spec.kind() == GenerationSpec.Kind.CHAT) {
        for (ChoiceStream c : choices) {
          ObjectNode role = ResponseJson.chunk(spec.kind(), id, created, spec.model(), c.index, "assistant", "", null);
          if (c.index == 0 && spec.output().tokenIds()) { // vLLM's return_token_ids: the prompt's, on chat's first chunk
            ChoiceStream.ids(role.putArray("prompt_token_ids"), c.prompt, c.prompt.length);
          }
          if (spec.output().continuousUsage()) {
            role.set("usage", usageSoFar(c));
          }
          sse.event(role);
        }
        sse.flush();
      }
    }
    if (spec.echo()) {
      for (ChoiceStream c : choices) {
        emit(c, c.promptText(), false);
      }
    }
    if (spec.echoedMessage() != null) { // chat's echo: the assistant message it continues, then the continuation
      for (ChoiceStream c : choices) {
        emit(c, spec.echoedMessage(), false);
      }
    }
  }

  private GenerationRequest request(ChoiceStream c) {
    // n > 1 with a seed: each choice gets its own reproducible stream.
    var sampling = spec.sampling();
    if (sampling.seed().isPresent()) {
      sampling = sampling.withSeed(java.util.OptionalLong.of(sampling.seed().getAsLong() + (c.index % spec.n())));
    }
    return tagged(new GenerationRequest(runId + "-" + c.index, c.prompt, sampling, spec.stop()));
  }

  /** {@code r} with what every generation of this request carries: the constraint, the adapter, the priority and the cache salt. */
  GenerationRequest tagged(GenerationRequest r) {
    return r.withStructuredOutput(spec.constraint())
        .withLora(spec.lora())
        .withPriority(spec.priority())
        .withCacheSalt(spec.cacheSalt());
  }

  /** Callbacks of one generation of {@code c}; those of a generation it migrated away from are ignored. */
  private TokenListener listener(ChoiceStream c, int attempt) {
    return new TokenListener() {
      @Override
      public void onChunk(TokenChunk chunk) {
        ctx.executor().execute(() -> {
          if (c.attempt == attempt) {
            onChunkInLoop(c, chunk, true);
          }
        });
      }

      @Override
      public void onError(GenerationException error) {
        ctx.executor().execute(() -> {
          if (c.attempt == attempt && !done && !c.finished() && !migrate(c, error)) {
            fail(GenerationErrors.worker(c.workerId, error));
          }
        });
      }

      @Override
      public void onCompleted() {
        ctx.executor().execute(() -> {
          if (c.attempt == attempt && !done && !c.finished() && !migrate(c, null)) {
            fail(GenerationErrors.streamEndedEarly(c.workerId));
          }
        });
      }
    };
  }

  /**
   * Continues a choice whose worker failed mid-stream on another worker: the prompt and the
   * tokens generated so far as the new prompt, the rest of the budget, the same sampling; the
   * worker counts those tokens as output (penalties, the grammar, a thinking budget). The client
   * sees one stream. Not for a request the worker refused or one pinned to a worker, and at most
   * {@code --migration-limit} times per choice.
   *
   * @return false when the choice cannot move (it is then failed)
   */
  private boolean migrate(ChoiceStream c, GenerationException cause) {
    if (c.migrations >= migrationLimit || spec.pinnedWorker() != null
        || (cause != null && cause.kind() == GenerationException.Kind.INVALID_REQUEST)) {
      return false;
    }
    int left = spec.stop().maxTokens() - c.generated.size();
    int[] prompt = Arrays.copyOf(c.prompt, c.prompt.length + c.generated.size());
    System.arraycopy(c.generated.elements(), 0, prompt, c.prompt.length, c.generated.size());
    if (left <= 0 || prompt.length >= maxContextLength) {
      return false;
    }
    var stop = new dev.tandem.common.StopConditions(left, spec.stop().stopTokenIds(), spec.stop().ignoreEos(),
        Math.max(0, spec.stop().minTokens() - c.generated.size()));
    GenerationRequest request = tagged(new GenerationRequest(
        runId + "-" + c.index + "-m" + (c.migrations + 1), prompt,
        // the prompt's log-probabilities again only where none came and the prompt is still the request's own
        c.promptScores == null && c.generated.isEmpty() ? request(c).sampling() : request(c).sampling().withPromptLogprobs(-1), stop))
        .resumedAfter(c.generated.size());
    Route route;
    try {
      route = router.route(request, null);
    } catch (RuntimeException e) {
      return false; // nowhere to go
    }
    String from = c.workerId;
    c.migrations++;
    c.attempt++;
    metrics.migration();
    log.info("request {} choice {}: worker {} failed after {} tokens ({}); continuing on {}", runId, c.index, from, c.generated.size(),
        cause == null ? "stream ended" : cause.getMessage(), route.worker());
    c.call = route.start(listener(c, c.attempt));
    return true;
  }

  /** Generations of the request went to their workers now (the first time counts). */
  void dispatched() {
    timing.dispatched(System.nanoTime());
  }

  /**
   * Every beam search is over: each choice is its prompt's next best beam, written back through
   * the path a generated stream takes (text, stop strings, parsers, log-probabilities, usage), as if
   * it had come in one chunk when the search ended.
   */
  void found(List<BeamRun.Search> searches) {
    begin();
    for (BeamRun.Search s : searches) {
      for (int j = 0; j < spec.n() && !done; j++) {
        ChoiceStream c = choices.get(s.index * spec.n() + j);
        c.call = reason -> {}; // nothing of it runs on a worker any more
        BeamSearch.Beam b = s.best.get(j);
        TokenLogprob[] logprobs = spec.logprobs() < 0 ? null
            : Arrays.stream(b.logprobs()).map(lp -> keepTop(lp, spec.logprobs())).toArray(TokenLogprob[]::new);
        timing.token(System.nanoTime(), -1); // the client's first token; the search had no gaps between tokens to record
        onChunkInLoop(c, new TokenChunk(b.tokens(), logprobs, b.ended() ? FinishReason.STOP : FinishReason.LENGTH, s.promptTokens,
            s.cachedTokens, s.origin), false);
      }
    }
  }

  /** {@code lp} with its {@code top} likeliest alternatives only. */
  private static TokenLogprob keepTop(TokenLogprob lp, int top) {
    int n = Math.min(top, lp.topTokenIds().length);
    return new TokenLogprob(lp.logprob(), Arrays.copyOf(lp.topTokenIds(), n), Arrays.copyOf(lp.topLogprobs(), n), lp.rank());
  }

  /** Takes a choice's next chunk; {@code timed}: its tokens arrived now, each recorded as a token's time. */
  private void onChunkInLoop(ChoiceStream c, TokenChunk chunk, boolean timed) {
    if (done || c.finished()) {
      return;
    }
    if (chunk.origin() != null && c.origin(chunk.origin())) {
      metrics.remotePrefillFallback();
    }
    if (chunk.promptLogprobs() != null && c.promptScores == null) { // from the first worker, or one it moved to before any output
      c.promptScores = chunk.promptLogprobs();
      if (spec.echo()) {
        c.promptLogprobs(chunk.promptLogprobs());
      }
    }
    if (chunk.promptTokens() > 0 && c.migrations == 0) { // after a migration the prompt holds the tokens so far
      c.promptTokens = chunk.promptTokens();
      c.cachedTokens = chunk.cachedTokens();
    }
    long now = System.nanoTime();
    StringBuilder out = new StringBuilder();
    int[] tokens = chunk.tokens();
    for (int k = 0; k < tokens.length; k++) {
      if (timed) {
        timing.token(now, c.lastTokenNanos);
        c.lastTokenNanos = now;
      }
      out.append(c.token(tokens[k], k < chunk.logprobCount() ? chunk.logprobs()[k] : null));
      if (c.stopped()) {
        c.call.cancel("stop string matched");
        emit(c, out.toString(), true);
        if (!c.finished()) {
          finish(c, "stop");
        }
        return;
      }
    }
    FinishReason reason = chunk.finishReason();
    if (reason != null) {
      out.append(c.flush());
      emit(c, out.toString(), true);
      if (c.finished()) {
        return;
      }
      switch (reason) {
        case STOP -> finish(c, "stop");
        case LENGTH -> finish(c, "length");
        default -> fail(GenerationErrors.endedByWorker(reason));
      }
      return;
    }
    emit(c, out.toString(), false);
  }

  /** Sends (or keeps) the next text of a choice, divided into reasoning, content and tool calls. */
  private void emit(ChoiceStream c, String text, boolean last) {
    if (text.isEmpty() && !last) {
      return;
    }
    ChoiceStream.Piece piece = c.parse(text, last);
    if (!spec.output().includeReasoning()) { // vLLM's include_reasoning false: parsed out, not returned
      piece = new ChoiceStream.Piece("", piece.content(), piece.toolCalls());
    }
    boolean oneCallMade = spec.oneToolCall() && !piece.toolCalls().isEmpty();
    if (oneCallMade) { // parallel_tool_calls false: the first call is the output's last word
      piece = new ChoiceStream.Piece(piece.reasoning(), piece.content(),
          c.toolCalls.isEmpty() ? List.of(piece.toolCalls().getFirst()) : List.of());
    }
    emitPiece(c, piece);
    if (oneCallMade && !last) {
      c.call.cancel("one tool call made (parallel_tool_calls false)");
      finish(c, "stop");
    }
  }

  private void emitPiece(ChoiceStream c, ChoiceStream.Piece piece) {
    if (!spec.stream()) {
      c.reasoning.append(piece.reasoning());
      c.text.append(piece.content());
      c.toolCalls.addAll(piece.toolCalls());
      return;
    }
    if (piece.isEmpty()) {
      return;
    }
    if (responses != null) {
      c.reasoning.append(piece.reasoning()); // counted at the end
      responses.reasoning(piece.reasoning());
      responses.content(piece.content());
      for (var call : piece.toolCalls()) {
        responses.toolCall(call);
        c.toolCalls.add(call);
      }
      sse.flush();
      return;
    }
    if (!piece.reasoning().isEmpty()) {
      send(c, ResponseJson.reasoningChunk(id, created, spec.model(), c.index, piece.reasoning()));
    }
    if (!piece.content().isEmpty()) {
      if (c.logprobs.isEmpty() && !spec.output().tokenIds() && !spec.output().continuousUsage()) {
        // the common case: the envelope's bytes are encoded once per response
        if (contentChunks == null) {
          contentChunks = new ContentChunks(spec.kind(), id, created, spec.model(), spec.includeUsage());
        }
        sse.content(contentChunks, c.index, piece.content());
      } else {
        ObjectNode chunk = ResponseJson.chunk(spec.kind(), id, created, spec.model(), c.index, null, piece.content(), null);
        c.attachLogprobs(spec.kind(), chunk);
        send(c, chunk);
      }
    }
    for (var call : piece.toolCalls()) {
      ResponseJson.toolCallChunks(id, created, spec.model(), c.index, c.toolCalls.size(), call).forEach(chunk -> send(c, chunk));
      c.toolCalls.add(call);
    }
    sse.flush();
  }

  /**
   * Sends a streamed chunk of choice {@code c} with the token ids not yet sent (vLLM's {@code
   * return_token_ids}) and the choice's usage so far (vLLM's {@code continuous_usage_stats}).
   */
  private void send(ChoiceStream c, ObjectNode chunk) {
    if (spec.output().tokenIds()) {
      c.attachTokenIds(spec.kind(), chunk);
    }
    if (spec.output().continuousUsage()) {
      chunk.set("usage", usageSoFar(c));
    }
    sse.event(chunk);
  }

  /** One choice's usage so far: its prompt, what the worker found cached of it, and its tokens out. */
  private static ObjectNode usageSoFar(ChoiceStream c) {
    return ResponseJson.usage(new ResponseJson.Usage(c.promptTokens, c.tokens, c.cachedTokens));
  }

  private void finish(ChoiceStream c, String reason) {
    if (reason.equals("stop") && c.calledTools()) {
      reason = "tool_calls";
    }
    c.finishReason = reason;
    finished++;
    boolean last = finished == choices.size();
    if (spec.stream() && responses == null) {
      ObjectNode chunk = ResponseJson.chunk(spec.kind(), id, created, spec.model(), c.index, null, null, reason);
      if (spec.kind() == GenerationSpec.Kind.CHAT) {
        ((ObjectNode) chunk.get("choices").get(0)).putObject("delta");
      }
      c.attachLogprobs(spec.kind(), chunk);
      if (last && spec.timing()) {
        chunk.set("tandem", timing.json(choices));
      }
      send(c, chunk);
    }
    if (last) {
      complete();
    } else if (spec.stream() && responses == null) {
      sse.flush();
    }
  }

  private void complete() {
    done = true;
    ResponseJson.Usage usage = usage();
    if (responses != null) {
      completeResponse(usage);
    } else if (spec.stream()) {
      if (spec.includeUsage()) {
        sse.event(ResponseJson.usageChunk(spec.kind(), id, created, spec.model(), usage));
      }
      sse.end();
    } else {
      List<ResponseJson.ChoiceResult> results = new ArrayList<>();
      for (ChoiceStream c : choices) {
        ObjectNode logprobs = spec.logprobs() < 0 ? null : ResponseJson.logprobs(spec.kind(), c.logprobs, 0);
        results.add(new ResponseJson.ChoiceResult(
            c.index, c.text.toString(), c.reasoning.toString(), c.toolCalls, c.finishReason, logprobs));
      }
      ObjectNode body = ResponseJson.response(spec.kind(), id, created, spec.model(), results, usage);
      int top = spec.output().promptLogprobs();
      if (top >= 0) { // vLLM's prompt_logprobs: chat's once, beside the choices; a completion's in each
        if (spec.kind() == GenerationSpec.Kind.CHAT) {
          body.set("prompt_logprobs", choices.getFirst().promptLogprobsJson(top));
        } else {
          for (ChoiceStream c : choices) {
            ((ObjectNode) body.get("choices").get(c.index)).set("prompt_logprobs", c.promptLogprobsJson(top));
          }
        }
      }
      if (spec.output().tokenIds()) { // vLLM's return_token_ids: chat's prompt once, beside the choices; a completion's in each
        if (spec.kind() == GenerationSpec.Kind.CHAT) {
          ChoiceStream.ids(body.putArray("prompt_token_ids"), spec.prompts().getFirst(), spec.prompts().getFirst().length);
        }
        for (ChoiceStream c : choices) {
          c.putTokenIds(spec.kind(), (ObjectNode) body.get("choices").get(c.index));
        }
      }
      if (spec.timing()) {
        body.set("tandem", timing.json(choices));
      }
      HttpResponses.json(ctx, 200, body, keepAlive).addListener(SseWriter.closeUnlessKeepAlive(keepAlive));
    }
    metrics.tokens(usage.promptTokens(), usage.cachedTokens(), usage.completionTokens());
    end(200);
  }

  /** The Responses API's end: {@code response.completed} (or incomplete) and no {@code [DONE]}, or the response object. */
  private void completeResponse(ResponseJson.Usage usage) {
    ChoiceStream c = choices.getFirst(); // no n in the Responses API
    String reasoning = c.reasoning.toString();
    long reasoningTokens = reasoning.isEmpty() ? 0 : model.tokenizer().encode(reasoning, false).length; // as its text re-encodes
    ObjectNode timingJson = spec.timing() ? timing.json(choices) : null;
    if (spec.stream()) {
      responses.complete(c.finishReason, usage, reasoningTokens, timingJson);
      sse.endEvents();
    } else {
      var result = new ResponseJson.ChoiceResult(c.index, c.text.toString(), reasoning, c.toolCalls, c.finishReason, null);
      HttpResponses.json(ctx, 200, responses.body(result, usage, reasoningTokens, timingJson), keepAlive)
          .addListener(SseWriter.closeUnlessKeepAlive(keepAlive));
    }
  }

  private ResponseJson.Usage usage() {
    long prompt = 0;
    long cached = 0;
    long completion = 0;
    for (ChoiceStream c : choices) {
      completion += c.tokens;
      if (c.index % spec.n() == 0) {
        prompt += c.promptTokens;
        cached += c.cachedTokens;
      }
    }
    return new ResponseJson.Usage(prompt, completion, cached);
  }

  /** Fails the whole request: cancels every choice and tells the client. */
  void fail(ApiException error) {
    if (done) {
      return;
    }
    done = true;
    cancelAll("request failed");
    if (sse.headersSent() && responses != null) {
      responses.error(error);
      sse.abort();
    } else if (sse.headersSent()) {
      sse.event(ResponseJson.error(error));
      sse.abort(); // an error event and no [DONE]: the stream did not complete
    } else {
      HttpResponses.error(ctx, error, keepAlive).addListener(SseWriter.closeUnlessKeepAlive(keepAlive));
    }
    end(error.status());
  }

  /** The client went away: stop every generation on the workers. */
  void clientGone() {
    if (done) {
      return;
    }
    done = true;
    routing.stopWaiting();
    cancelAll("client disconnected");
    metrics.disconnect();
    end(499);
  }

  private void cancelAll(String reason) {
    for (ChoiceStream c : choices) {
      if (c.call != null && !c.finished()) {
        c.call.cancel(reason);
      }
    }
    if (beams != null) {
      beams.cancel(reason);
    }
  }

  private void end(int status) {
    String endpoint = responses != null ? "responses" : spec.kind() == GenerationSpec.Kind.CHAT ? "chat_completions" : "completions";
    metrics.runEnded(endpoint, status, System.nanoTime() - timing.startNanos());
    onDone.run();
  }
}
